"""native/gpu_check.py without a GPU: the CPU-only mode for real (two CPU code paths), the
comparison failing on perturbed logits, the GPU mode refusing a build that cannot offload, and
native/gpu_bench.sh stopping at once without nvidia-smi. A few seconds in all."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "native" / "gpu_check.py"


def load_gpu_check() -> ModuleType:
    """native/gpu_check.py, imported from its path (native/ is not a package)."""
    name = "mangaka_native_gpu_check"
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


gc = load_gpu_check()


def run_check(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], dict]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, f"stdout must be one JSON line:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done, json.loads(lines[0])


@pytest.fixture(scope="module")
def cpu_only(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict, Path]:
    work = tmp_path_factory.mktemp("gpu-check")
    done, result = run_check("--cpu-only", "--work", str(work))
    return done, result, work


def runs(work: Path, result: dict, arch: str) -> tuple:
    """The reference and candidate runs of ``arch`` that the CPU-only check left in ``work``."""
    devices = result["devices"]
    return tuple(
        gc.load_run(work, devices[role], arch, json.loads((work / f"run-{devices[role]}.json").read_text()))
        for role in ("reference", "candidate")
    )


def test_cpu_only_mode_compares_two_code_paths_and_passes(cpu_only):
    done, result, _ = cpu_only
    assert done.returncode == 0, done.stderr[-3000:]
    assert result["ok"] is True and result["error"] is None
    assert result["mode"] == "cpu-only"
    assert result["devices"] == {"candidate": "cpu-ubatch1", "reference": "cpu"}
    assert set(result["runs"]) == {"cpu-ubatch1", "cpu"}
    assert all(r["returncode"] == 0 and r["gpu_offload"] is False for r in result["runs"].values())
    assert set(result["models"]) == {"qwen35moe", "qwen3moe"}
    for arch, m in result["models"].items():
        assert m["ok"] and m["failures"] == [], (arch, m)
        assert m["n_prompt"] >= 24 and m["n_generated"] == gc.N_GENERATE
        # identical continuations: every row, prompt and greedy steps, was compared
        assert m["greedy_identical"] and m["greedy_first_diff"] is None
        assert m["positions_compared"] == m["n_prompt"] + m["n_generated"] - 1
        assert m["generated"]["reference"] == m["generated"]["candidate"]
        assert len(set(m["generated"]["reference"])) > 3, "a degenerate continuation"
        assert m["finite"] and m["reference_logit_std"] > 1.0  # real logits, not zeros
        assert m["top1_agreement"] == 1.0 and m["top1_clear_disagreements"] == 0
        # two CPU code paths differ by rounding only: far below the tolerance, but not zero
        # (a zero would mean both runs took the same path)
        assert 0 < m["max_rel_diff"] < gc.MAX_REL_DIFF / 20, (arch, m["max_rel_diff"])
        assert m["median_rel_diff"] <= m["max_rel_diff"]
    assert result["tolerances"] == {
        "max_rel_diff": gc.MAX_REL_DIFF,
        "median_rel_diff": gc.MEDIAN_REL_DIFF,
        "top1_tie_margin": gc.TOP1_TIE_MARGIN,
    }


def test_comparison_fails_on_perturbed_logits(cpu_only):
    _, result, work = cpu_only
    reference, candidate = runs(work, result, "qwen35moe")
    assert gc.compare(reference, candidate)["ok"]  # unperturbed: the control
    logits = candidate.logits
    std = reference.logits.std(axis=1, keepdims=True)

    # One prompt position's top-1 swapped with a token far below it.
    pos = 5
    swapped = logits.copy()
    order = np.argsort(reference.logits[pos])
    top, low = order[-1], order[len(order) // 2]
    assert (reference.logits[pos, top] - reference.logits[pos, low]) / std[pos, 0] > gc.TOP1_TIE_MARGIN
    swapped[pos, [top, low]] = swapped[pos, [low, top]]
    got = gc.compare(reference, gc.Run(candidate.device, candidate.prompt, candidate.generated, swapped))
    assert not got["ok"]
    assert got["top1_clear_disagreements"] == 1 and got["clear_disagreement_positions"] == [pos]
    assert got["worst_position"] == pos and got["max_rel_diff"] > gc.MAX_REL_DIFF
    assert any("top-1" in f for f in got["failures"])

    # +/- noise of a given size (in reference stds) at some positions: each tolerance, both sides.
    rng = np.random.default_rng(0)
    sign = rng.choice([-1.0, 1.0], size=logits.shape)
    every = slice(None)
    for where, size, failing in (
        (every, 2.0 * gc.MAX_REL_DIFF, ("max |Δlogit|", "median")),
        (pos, 1.2 * gc.MAX_REL_DIFF, ("max |Δlogit|",)),
        (pos, 0.9 * gc.MAX_REL_DIFF, ()),
        (every, 1.5 * gc.MEDIAN_REL_DIFF, ("median",)),
        (every, 0.5 * gc.MEDIAN_REL_DIFF, ()),
    ):
        noisy = reference.logits.astype(np.float64)
        noisy[where] += (sign * size * std)[where]
        got = gc.compare(reference, gc.Run("noisy", candidate.prompt, candidate.generated, noisy))
        assert got["max_rel_diff"] == pytest.approx(size, rel=1e-3)
        assert got["ok"] == (not failing), (where, size, got["failures"])
        for what in failing:
            assert any(what in f for f in got["failures"]), (where, size, got["failures"])

    # A NaN anywhere fails.
    broken = logits.copy()
    broken[-1, 3] = np.nan
    got = gc.compare(reference, gc.Run(candidate.device, candidate.prompt, candidate.generated, broken))
    assert not got["ok"] and got["finite"] is False

    # A different tokenization is not compared at all.
    got = gc.compare(reference, gc.Run(candidate.device, candidate.prompt[1:], candidate.generated, logits))
    assert not got["ok"] and got["positions_compared"] == 0


def _run(prompt: list[int], generated: list[int], rows: list[list[float]]) -> object:
    return gc.Run("test", prompt, generated, np.array(rows, dtype=np.float32))


def test_greedy_divergence_passes_at_a_near_tie_and_fails_at_a_clear_margin():
    # 3 prompt tokens, 3 generated: rows 0-2 are the prompt's, row 2 chose generated[0], row 3
    # generated[1], row 4 generated[2]. The reference's row 3: token 1 at 4.0, token 2 at 3.99.
    base = [0.0, 4.0, 3.99, -1.0, -2.0, 1.0]
    rows = [
        [1.0, 0.0, -1.0, 2.0, 0.5, -0.5],
        [0.0, 2.0, -1.0, 1.0, 0.5, -0.5],
        [3.0, 0.0, -1.0, 2.0, 0.5, -0.5],
    ]
    reference = _run([7, 8, 9], [0, 1, 5], [*rows, base, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])

    # The candidate sees token 2 a hair above token 1 at row 3 and continues differently.
    tie = _run([7, 8, 9], [0, 2, 4], [*rows, [0.0, 3.995, 3.996, -1.0, -2.0, 1.0], [9.0] * 6])
    got = gc.compare(reference, tie)
    assert got["ok"], got["failures"]
    assert not got["greedy_identical"] and got["greedy_first_diff"] == 1
    assert got["greedy_divergence_at_near_tie"] is True
    assert got["positions_compared"] == 4  # row 4 followed different tokens: not compared
    assert got["top1_disagreements"] == 1 and got["top1_clear_disagreements"] == 0

    # The candidate picks token 5, which the reference put 3 logits (well over the margin) below.
    clear = _run([7, 8, 9], [0, 5, 4], [*rows, [0.0, 4.0, 3.99, -1.0, -2.0, 4.5], [9.0] * 6])
    got = gc.compare(reference, clear)
    assert not got["ok"]
    assert got["greedy_divergence_at_near_tie"] is False
    assert any("greedy" in f for f in got["failures"])
    assert got["clear_disagreement_positions"] == [3]


def test_tf32_sized_rounding_stays_within_tolerance():
    """The GPU rounds F32 matrix products to TF32; cpu-tf32sim does that to the weights on the CPU.
    It passing means the models and prompt are not at a routing near-tie (see MODEL_SEEDS)."""
    done, result = run_check("--devices", "cpu-tf32sim,cpu")
    assert done.returncode == 0, (result["models"], done.stderr[-3000:])
    for m in result["models"].values():
        assert 0 < m["max_rel_diff"] < gc.MAX_REL_DIFF / 2  # it did perturb, and left a margin


def test_gpu_mode_without_gpu_offload_exits_2_with_the_fix(cpu_only, tmp_path):
    llama_cpp = pytest.importorskip("llama_cpp")
    if llama_cpp.llama_supports_gpu_offload():
        pytest.skip("this llama-cpp-python can offload to a GPU")
    done, result = run_check("--work", str(tmp_path))
    assert done.returncode == 2
    assert result["ok"] is False and result["mode"] == "gpu"
    assert "cannot offload to a GPU" in result["error"] and "--target cuda" in result["error"]
    assert "cannot offload to a GPU" in done.stderr
    assert not (tmp_path / "run-cpu.json").exists()  # stopped before the reference ran
    assert set(result) == set(cpu_only[1])  # the same keys as a completed check


def test_usage_errors_exit_2(tmp_path):
    done, result = run_check("--devices", "gpu,tpu", "--work", str(tmp_path))
    assert done.returncode == 2 and "--devices takes two different devices" in result["error"]


def test_a_failed_comparison_exits_1(monkeypatch, capsys):
    def failed(*_args, **_kwargs):
        report = gc.empty_report(("cpu-ubatch1", "cpu"), "auto", False)
        report["models"] = {"qwen3moe": {"ok": False, "failures": ["made up"]}}
        return report

    monkeypatch.setattr(gc, "check", failed)
    assert gc.main(["--cpu-only"]) == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False


def test_gpu_bench_runs_gpu_check_after_the_offload_check_and_before_the_bench():
    text = (ROOT / "native" / "gpu_bench.sh").read_text()
    check = text.index('"$root/native/gpu_check.py" "${check_mode[@]}" --work "$home/gpu-check"')
    assert text.index('grep -q "llama_supports_gpu_offload(): True"') < check
    assert check < text.index("llama-bench on SmolLM2") < text.index('"$vpy" -m mangaka bench')
    # The CPU-only comparison is for the dry run alone: a real run compares the GPU with the CPU.
    assert '[ "$dry" = 1 ] && check_mode=(--cpu-only)' in text[:check]
    assert '| tee "$results/gpu-check.json"' in text[check : check + 200]
    assert subprocess.run(["bash", "-n", str(ROOT / "native" / "gpu_bench.sh")]).returncode == 0


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_gpu_bench_stops_at_once_without_nvidia_smi(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("MANGAKA_CACHE", "OUT", "CUDA_ARCH")}
    # PYTHON points nowhere: should the script ever get past the GPU check here, it fails at the
    # venv at once instead of downloading.
    env.update(GPU_BENCH_HOME=str(home), PYTHON=str(tmp_path / "no-python"))
    done = subprocess.run(
        ["bash", str(ROOT / "native" / "gpu_bench.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "nvidia-smi not found" in done.stderr
    assert not (home / "venv").exists()
    assert not any((home / "cache").iterdir())  # nothing fetched
