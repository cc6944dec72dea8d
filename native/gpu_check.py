"""GPU-vs-CPU logits check: the same tiny models, the same prompt, on two devices; compare.

    .venv/bin/python native/gpu_check.py                  # gpu vs cpu (needs a GPU build and a GPU)
    .venv/bin/python native/gpu_check.py --cpu-only       # two CPU code paths (CI, no GPU)
    .venv/bin/python native/gpu_check.py --devices cpu-tf32sim,cpu   # TF32-sized rounding on CPU
    .venv/bin/python native/gpu_check.py --work DIR       # keep the models and logits (.npy) in DIR

The tiny random-weight ``qwen35moe`` (hybrid: Gated DeltaNet + attention, MoE with a shared
expert) and ``qwen3moe`` (attention, MoE) models of ``mangaka/devtools/tiny_models.py`` are written into the
work folder. Each device then runs in its own subprocess (a CUDA crash fails that run, not the
report): load the model (``n_gpu_layers=-1`` on a GPU, 0 on the CPU; one thread), evaluate a fixed
prompt with the logits of every position, and continue it greedily (argmax) for
:data:`N_GENERATE` tokens, one token per decode. The first device named is the candidate, the
second the reference; per model the report gives:

- ``max_abs_diff``, ``max_rel_diff`` (max |candidate - reference| over the vocabulary, divided by
  the std of the reference's logits at that position, max over positions), ``median_rel_diff``;
- top-1 agreement per position, and the disagreements that count: those where the reference's
  logit for its own top-1 exceeds its logit for the candidate's top-1 by more than
  :data:`TOP1_TIE_MARGIN` stds (a nearer tie may flip legitimately);
- whether the greedy continuations are identical, and if not the first differing index.

Greedy rule: up to and including the first differing token both devices decoded the same
context, so those positions are compared like the prompt's; after it the contexts differ and
nothing more is compared. A divergence at a near tie (the reference's margin between the two
chosen tokens within :data:`TOP1_TIE_MARGIN`) is legitimate and passes; one with a clear margin is
a failure (it is also a clear top-1 disagreement at that position).

Devices (:data:`DEVICES`): ``gpu``, ``gpu-ubatch1``, ``cpu``, ``cpu-ubatch1`` (one token per
ubatch: llama.cpp's matrix-vector kernels, DeltaNet's token-by-token recurrence instead of the
chunked one, a KV cache filled one row at a time) and ``cpu-tf32sim`` (the CPU on a copy of the
model whose matrices are rounded to TF32's 10-bit mantissa: a CPU stand-in for the GPU's TF32
tensor-core rounding). ``--cpu-only`` is ``--devices cpu-ubatch1,cpu``.

Output: one JSON object on stdout (the same keys in every mode), logging on stderr. Exit 0 when
every comparison passes, 1 when one fails (or a device run crashed), 2 on a usage or environment
error (no llama-cpp-python, a build that cannot offload to a GPU, ...) with the fix in ``error``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path rather than run
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from native_common import procs

log = logging.getLogger("mangaka.native.gpu_check")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# -- tolerances ------------------------------------------------------------------------------------
# Errors are measured per position in units of the std of the reference's logits at that position
# (about 6 logits for the tiny models), so that they do not depend on the models' logit scale.
# Measured on this project's 2-core x86-64 machine (tiny models, this prompt):
#   CPU vs CPU by another code path (one token per ubatch, or flash attention off), 30 model seeds
#   per architecture: max 0.005, median 0.0003 (qwen35moe) / 0.0017 (qwen3moe).
#   CPU vs the CPU on matrices rounded like TF32 (a GPU's tensor cores: ggml's own F32 kernels
#   and cuBLAS) or scaled by 1 +/- 0.05-0.1 % noise, 30 perturbations per seed: median up to 0.01,
#   max 0.009 (qwen3moe) and 0.055 (qwen35moe: its recurrence amplifies rounding) for MODEL_SEEDS.
#   For most other seeds some perturbation flips a router's choice where its 2nd and 3rd expert
#   nearly tie, and the error at that position jumps to 0.3-2.7 stds: legitimate, but not to be
#   told apart from a bug, hence seeds (and a prompt) without such a near-tie.
# A broken kernel (wrong offsets, a missing op, garbage memory) is off by O(1) stds or more.
MAX_REL_DIFF = 0.15
"""Max |Δlogit| at any compared position, in reference stds: ~3× the worst TF32-sized error seen."""
MEDIAN_REL_DIFF = 0.05
"""Median over positions of the per-position max |Δlogit| (a systematic drift): 5× TF32's worst."""
TOP1_TIE_MARGIN = 2 * MAX_REL_DIFF
"""A top-1 disagreement counts only above this reference margin (in stds): two logits each within
MAX_REL_DIFF of the reference can swap order only when they are closer than twice that."""

# -- the models and the prompt ---------------------------------------------------------------------
# write_model seeds chosen, among 40 (qwen35moe) and 12 (qwen3moe), as the ones farthest from a
# routing near-tie on this prompt and its greedy continuation: under 30 TF32-sized perturbations
# (round to nearest and toward zero at 11, 10 and 9 mantissa bits; 16 draws of +/-0.05 % and 8 of
# +/-0.1 % noise) their max_rel_diff stayed below 0.06. test_gpu_check.py keeps cpu-tf32sim passing.
MODEL_SEEDS: dict[str, int] = {"qwen35moe": 19, "qwen3moe": 2}
CONTEXT_LENGTH = 4096  # the trained length written into the GGUF
N_CTX = 256
N_GENERATE = 24
PROMPT = "The keeper climbed the stairs at dusk while the storm gathered over the sea."  # 50 tokens
TF32_DROPPED_BITS = 23 - 10  # float32 has 23 mantissa bits, TF32 10
WORKER_TIMEOUT_S = 300
EXIT_ENVIRONMENT = 2


@dataclass(frozen=True)
class Device:
    name: str
    gpu: bool
    ubatch: int  # tokens per decode for the prompt; 0 = the whole prompt in one batch
    tf32_sim: bool = False


DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("gpu", gpu=True, ubatch=0),
        Device("gpu-ubatch1", gpu=True, ubatch=1),
        Device("cpu", gpu=False, ubatch=0),
        Device("cpu-ubatch1", gpu=False, ubatch=1),
        Device("cpu-tf32sim", gpu=False, ubatch=0, tf32_sim=True),
    )
}
CPU_ONLY = ("cpu-ubatch1", "cpu")
DEFAULT_DEVICES = ("gpu", "cpu")


class EnvironmentProblem(Exception):
    """Something to install or rebuild before the check can run (exit 2)."""

    def __init__(self, message: str, logged: bool = False) -> None:
        super().__init__(message)
        self.logged = logged  # already on stderr (a child's own message)


@dataclass
class Run:
    """One device's evaluation of one model: prompt tokens, greedy tokens, logits of every row.

    Row ``i`` of ``logits`` predicts the token after position ``i``: rows ``0 .. n_prompt-1`` are
    the prompt's, row ``n_prompt - 1 + j`` chose ``generated[j]`` (the last generated token is
    never decoded, so there are ``n_prompt + len(generated) - 1`` rows).
    """

    device: str
    prompt: list[int]
    generated: list[int]
    logits: np.ndarray
    seconds: float = 0.0


def model_path(work: Path, arch: str, tf32_sim: bool = False) -> Path:
    return work / f"tiny-{arch}-seed{MODEL_SEEDS[arch]}{'-tf32' if tf32_sim else ''}.gguf"


# -- the comparison --------------------------------------------------------------------------------


def _num(x: float) -> float | None:
    """A float for JSON: rounded to 6 significant digits; None when not finite."""
    x = float(x)
    return float(f"{x:.6g}") if math.isfinite(x) else None


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where the token lists differ (a shorter list differs at its end)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _blank_result(
    reference: Run, candidate: Run, first_diff: int | None, failures: list[str]
) -> dict[str, Any]:
    """The comparison's keys, before anything is measured."""
    return {
        "ok": False,
        "failures": failures,
        "n_prompt": len(reference.prompt),
        "n_generated": len(reference.generated),
        "positions_compared": 0,
        "finite": None,
        "reference_logit_std": None,
        "max_abs_diff": None,
        "max_rel_diff": None,
        "median_rel_diff": None,
        "worst_position": None,
        "top1_agreement": None,
        "top1_disagreements": None,
        "top1_clear_disagreements": None,
        "clear_disagreement_positions": [],
        "greedy_identical": first_diff is None,
        "greedy_first_diff": first_diff,
        "greedy_divergence_at_near_tie": None,
        "generated": {"reference": list(reference.generated), "candidate": list(candidate.generated)},
        "seconds": {"reference": _num(reference.seconds), "candidate": _num(candidate.seconds)},
    }


def _rows(reference: Run, candidate: Run, first_diff: int | None, failures: list[str]) -> int:
    """How many rows of logits both runs decoded from the same context (0: none to compare).

    Those are the prompt's, then the greedy steps up to and including the one where the
    continuations part (its logits chose differently)."""
    if candidate.prompt != reference.prompt:
        failures.append("the two runs tokenized the prompt differently")
        return 0
    if reference.logits.ndim != 2 or reference.logits.shape[1:] != candidate.logits.shape[1:]:
        failures.append(f"logits shapes differ: {reference.logits.shape} vs {candidate.logits.shape}")
        return 0
    rows = min(len(reference.logits), len(candidate.logits))
    if first_diff is None and len(reference.logits) != len(candidate.logits):
        failures.append(f"{len(candidate.logits)} rows of logits, the reference has {len(reference.logits)}")
    if first_diff is not None:
        rows = min(rows, len(reference.prompt) + first_diff)
    if rows < 1:
        failures.append("no logits to compare")
    return max(rows, 0)


def _differences(
    ref: np.ndarray, cand: np.ndarray, result: dict[str, Any], failures: list[str]
) -> np.ndarray:
    """The differences, measured into ``result`` and judged against the tolerances; the positions
    where the top-1 token differs with a clear margin."""
    std = ref.std(axis=1)
    diff = np.abs(cand - ref)
    rel = diff.max(axis=1) / std
    at = np.arange(len(ref))
    ref_top = ref.argmax(axis=1)
    cand_top = cand.argmax(axis=1)
    margin = (ref[at, ref_top] - ref[at, cand_top]) / std  # 0 where they agree
    disagree = ref_top != cand_top
    clear = disagree & (margin > TOP1_TIE_MARGIN)
    worst = int(rel.argmax())
    result.update(
        reference_logit_std=_num(std.mean()),
        max_abs_diff=_num(diff.max()),
        max_rel_diff=_num(rel.max()),
        median_rel_diff=_num(np.median(rel)),
        worst_position=worst,
        top1_agreement=_num(1.0 - disagree.mean()),
        top1_disagreements=int(disagree.sum()),
        top1_clear_disagreements=int(clear.sum()),
        clear_disagreement_positions=[int(i) for i in np.flatnonzero(clear)],
    )
    if rel.max() > MAX_REL_DIFF:
        failures.append(
            f"max |Δlogit| is {rel.max():.3g} reference stds at position {worst} (tolerance {MAX_REL_DIFF})"
        )
    if np.median(rel) > MEDIAN_REL_DIFF:
        failures.append(
            f"median per-position |Δlogit| is {np.median(rel):.3g} stds (tolerance {MEDIAN_REL_DIFF})"
        )
    if clear.any():
        failures.append(
            f"top-1 differs with a clear margin (> {TOP1_TIE_MARGIN} stds) at positions "
            f"{result['clear_disagreement_positions']}"
        )
    return clear


def compare(reference: Run, candidate: Run) -> dict[str, Any]:
    """Compare ``candidate`` against ``reference``; ``ok`` is False with ``failures`` if it fails."""
    failures: list[str] = []
    first_diff = first_difference(reference.generated, candidate.generated)
    result = _blank_result(reference, candidate, first_diff, failures)
    rows = _rows(reference, candidate, first_diff, failures)
    if rows < 1:
        return result
    ref = reference.logits[:rows].astype(np.float64)
    cand = candidate.logits[:rows].astype(np.float64)
    finite = bool(np.isfinite(ref).all() and np.isfinite(cand).all())
    result["finite"] = finite
    result["positions_compared"] = rows
    if not finite:
        bad = [name for name, a in (("reference", ref), ("candidate", cand)) if not np.isfinite(a).all()]
        failures.append(f"non-finite logits (NaN or inf) in the {' and '.join(bad)} run")
        return result
    if not (ref.std(axis=1) > 0).all():
        failures.append("the reference's logits are constant at some position: nothing was computed")
        return result
    clear = _differences(ref, cand, result, failures)
    if first_diff is not None:
        row = len(reference.prompt) - 1 + first_diff
        if row < rows and len(reference.generated) > first_diff and len(candidate.generated) > first_diff:
            near_tie = not bool(clear[row])
        else:  # one continuation is shorter than the other: nothing to excuse it
            near_tie = False
        result["greedy_divergence_at_near_tie"] = near_tie
        if not near_tie:
            failures.append(f"greedy continuations differ from token {first_diff} on, not at a near tie")
    result["ok"] = not failures
    return result


# -- the device runs (subprocesses) ----------------------------------------------------------------


def _child_env(no_tf32: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if no_tf32:
        env["NVIDIA_TF32_OVERRIDE"] = "0"  # cuBLAS only; ggml's own mma kernels keep TF32
    return env


def _last_line(text: str) -> str:
    """The last line a child wrote to stderr, without the logging prefix."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].removeprefix(f"ERROR {log.name}: ") if lines else ""


def _child(args: list[str], env: dict[str, str], what: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    try:
        done = procs.run(cmd, capture_output=True, text=True, env=env, timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        sys.stderr.write(err)
        return subprocess.CompletedProcess(
            cmd, 124, "", err + f"\n{what} timed out after {WORKER_TIMEOUT_S} s"
        )
    sys.stderr.write(done.stderr)
    if done.returncode == EXIT_ENVIRONMENT:
        raise EnvironmentProblem(_last_line(done.stderr) or f"{what} failed (exit 2)", logged=True)
    return done


def write_models(work: Path, tf32_sim: bool, env: dict[str, str]) -> None:
    args = ["--write-models", str(work)] + (["--tf32-sim"] if tf32_sim else [])
    done = _child(args, env, "writing the tiny models")
    if done.returncode != 0:
        raise EnvironmentProblem(
            f"could not write the tiny models (exit {done.returncode}): {_last_line(done.stderr)}; "
            "the venv needs numpy and gguf (pip install -r requirements-dev.txt)"
        )


def run_device(device: Device, work: Path, flash_attn: str, env: dict[str, str]) -> dict[str, Any]:
    """Run ``device`` in a subprocess; its record, with ``returncode`` and, on a crash, ``error``."""
    started = time.monotonic()
    out = work / f"run-{device.name}.json"
    out.unlink(missing_ok=True)  # a previous check's, in a reused --work
    args = ["--worker", device.name, "--work", str(work), "--flash-attn", flash_attn]
    done = _child(args, env, f"the {device.name} run")
    record: dict[str, Any] = {"returncode": done.returncode, "seconds": _num(time.monotonic() - started)}
    if done.returncode == 0 and out.exists():
        record.update(json.loads(out.read_text()))
    else:
        record["error"] = f"the {device.name} run failed (exit {done.returncode}): {_last_line(done.stderr)}"
        log.error("%s", record["error"])
    return record


def load_run(work: Path, device: str, arch: str, record: dict[str, Any]) -> Run:
    info = record["models"][arch]
    return Run(
        device=device,
        prompt=list(info["prompt"]),
        generated=list(info["generated"]),
        logits=np.load(work / f"logits-{device}-{arch}.npy"),
        seconds=float(info["seconds"]),
    )


# -- the worker: one device, every model -----------------------------------------------------------


def _evaluate(llama_cpp: Any, path: Path, device: Device, flash_attn: str) -> tuple[Run, np.ndarray]:
    # "auto" as the pack's loader asks for it: on where the device supports it.
    from mangaka.llm.patches import flash_attn_type

    batch = device.ubatch or N_CTX
    started = time.monotonic()
    with flash_attn_type(llama_cpp, flash_attn):
        llama = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=N_CTX,
            n_batch=batch,
            n_ubatch=batch,
            n_gpu_layers=-1 if device.gpu else 0,
            n_threads=1,  # the tiny models run fastest on one thread
            n_threads_batch=1,
            logits_all=True,
            flash_attn=flash_attn != "off",
            verbose=False,
        )
    try:
        prompt = llama.tokenize(PROMPT.encode(), add_bos=False, special=False)
        llama.eval(prompt)
        generated: list[int] = []
        for i in range(N_GENERATE):
            token = int(np.argmax(llama.scores[llama.n_tokens - 1]))
            generated.append(token)
            if i < N_GENERATE - 1:
                llama.eval([token])
        logits = np.array(llama.scores[: llama.n_tokens], dtype=np.float32)
    finally:
        llama.close()
    run = Run(device.name, list(prompt), generated, logits, time.monotonic() - started)
    return run, logits


def worker(device: Device, work: Path, flash_attn: str) -> int:
    try:
        import llama_cpp
    except ImportError as exc:
        log.error(
            "llama-cpp-python cannot be imported in %s (%s): install it with "
            "`%s native/install.py --target %s`",
            sys.executable,
            exc,
            sys.executable,
            "cuda" if device.gpu else "cpu",
        )
        return EXIT_ENVIRONMENT
    offload = bool(llama_cpp.llama_supports_gpu_offload())
    if device.gpu and not offload:
        log.error(
            "this llama-cpp-python build cannot offload to a GPU (llama_supports_gpu_offload() is "
            "false: a CPU-only build, or no GPU visible): rebuild it with `python native/install.py "
            "--target cuda`, or run this check with --cpu-only"
        )
        return EXIT_ENVIRONMENT
    record: dict[str, Any] = {
        "llama_cpp": getattr(llama_cpp, "__version__", "?"),
        "gpu_offload": offload,
        "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
        "models": {},
    }
    for arch in MODEL_SEEDS:
        path = model_path(work, arch, device.tf32_sim)
        run, logits = _evaluate(llama_cpp, path, device, flash_attn)
        np.save(work / f"logits-{device.name}-{arch}.npy", logits)
        record["models"][arch] = {"prompt": run.prompt, "generated": run.generated, "seconds": run.seconds}
        log.info("%s %s: %d prompt tokens, %.2f s", device.name, arch, len(run.prompt), run.seconds)
    (work / f"run-{device.name}.json").write_text(json.dumps(record))
    return 0


def round_to_tf32(path: Path, dropped_bits: int = TF32_DROPPED_BITS, truncate: bool = False) -> None:
    """Round, in place, every matrix of a GGUF file that the model multiplies by (not the token
    embeddings, which are looked up, nor the 1-D norms and biases) to ``23 - dropped_bits``
    mantissa bits: to nearest, or toward zero with ``truncate``."""
    import gguf

    reader = gguf.GGUFReader(path, "r+")
    for tensor in reader.tensors:
        data = tensor.data
        if data.dtype != np.float32 or data.ndim < 2 or tensor.name.startswith("token_embd"):
            continue
        if "ssm_conv1d" in tensor.name:  # a convolution, element by element: no matrix unit
            continue
        bits = data.view(np.uint32)
        if not truncate:
            bits += np.uint32(1 << (dropped_bits - 1))  # carries into the exponent as rounding should
        bits &= np.uint32(~((1 << dropped_bits) - 1) & 0xFFFFFFFF)
    del reader


def write_model_files(work: Path, tf32_sim: bool) -> None:
    from mangaka.devtools.tiny_models import write_model

    logging.getLogger("gguf").setLevel(logging.WARNING)
    for arch, seed in MODEL_SEEDS.items():
        path = write_model(model_path(work, arch), arch, seed=seed, context_length=CONTEXT_LENGTH)
        if tf32_sim:
            shutil.copyfile(path, model_path(work, arch, tf32_sim=True))
            round_to_tf32(model_path(work, arch, tf32_sim=True))


# -- the check -------------------------------------------------------------------------------------


def tolerances() -> dict[str, float]:
    return {
        "max_rel_diff": MAX_REL_DIFF,
        "median_rel_diff": MEDIAN_REL_DIFF,
        "top1_tie_margin": TOP1_TIE_MARGIN,
    }


def parse_devices(text: str) -> tuple[str, str]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in DEVICES]
    if len(names) != 2 or unknown or names[0] == names[1]:
        raise EnvironmentProblem(
            f"--devices takes two different devices, CANDIDATE,REFERENCE, from {', '.join(DEVICES)}; "
            f"got {text!r} (e.g. --devices gpu,cpu, or --cpu-only)"
        )
    return names[0], names[1]


def check(
    devices: tuple[str, str], work: Path, flash_attn: str = "auto", no_tf32: bool = False
) -> dict[str, Any]:
    """Run both devices and compare; the report (``ok`` says whether every comparison passed)."""
    started = time.monotonic()
    candidate, reference = devices
    env = _child_env(no_tf32)
    work.mkdir(parents=True, exist_ok=True)
    report = empty_report(devices, flash_attn, no_tf32)
    report["work"] = str(work)
    write_models(work, any(DEVICES[d].tf32_sim for d in devices), env)
    records: dict[str, dict[str, Any]] = {}
    for name in (candidate, reference):  # the candidate first: a GPU problem shows at once
        records[name] = run_device(DEVICES[name], work, flash_attn, env)
        report["runs"][name] = {k: v for k, v in records[name].items() if k != "models"}
    crashed = [n for n in devices if records[n]["returncode"] != 0]
    for arch in MODEL_SEEDS:
        if crashed:
            report["models"][arch] = {"ok": False, "failures": [records[n]["error"] for n in crashed]}
            continue
        result = compare(
            load_run(work, reference, arch, records[reference]),
            load_run(work, candidate, arch, records[candidate]),
        )
        report["models"][arch] = result
        for failure in result["failures"]:
            log.error("%s: %s", arch, failure)
    report["ok"] = bool(report["models"]) and all(m["ok"] for m in report["models"].values())
    report["seconds"] = _num(time.monotonic() - started)
    return report


def empty_report(devices: tuple[str, str], flash_attn: str, no_tf32: bool) -> dict[str, Any]:
    return {
        "ok": False,
        "error": None,
        "mode": "gpu" if any(DEVICES[d].gpu for d in devices if d in DEVICES) else "cpu-only",
        "devices": {"candidate": devices[0], "reference": devices[1]},
        "tolerances": tolerances(),
        "flash_attn": flash_attn,
        "tf32": "off in cuBLAS (NVIDIA_TF32_OVERRIDE=0)"
        if no_tf32 or os.environ.get("NVIDIA_TF32_OVERRIDE") == "0"
        else "default",
        "models": {},
        "runs": {},
        "work": None,
        "seconds": None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--devices",
        default=",".join(DEFAULT_DEVICES),
        help=f"CANDIDATE,REFERENCE from {', '.join(DEVICES)} (default: %(default)s)",
    )
    which.add_argument("--cpu-only", action="store_true", help="--devices " + ",".join(CPU_ONLY))
    parser.add_argument("--work", type=Path, help="folder for the models and logits (default: a temp dir)")
    parser.add_argument("--flash-attn", choices=("auto", "on", "off"), default="auto")
    parser.add_argument(
        "--no-tf32", action="store_true", help="GPU runs with NVIDIA_TF32_OVERRIDE=0 (cuBLAS in full F32)"
    )
    parser.add_argument("--worker", choices=tuple(DEVICES), help=argparse.SUPPRESS)
    parser.add_argument("--write-models", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tf32-sim", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)

    if args.write_models is not None:
        write_model_files(args.write_models, args.tf32_sim)
        return 0
    if args.worker is not None:
        if args.work is None:
            parser.error("--worker needs --work")
        return worker(DEVICES[args.worker], args.work, args.flash_attn)

    requested = ",".join(CPU_ONLY) if args.cpu_only else args.devices
    with contextlib.ExitStack() as stack:
        if args.work is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mangaka-gpu-check-")))
        else:
            work = args.work.resolve()
        try:
            devices = parse_devices(requested)
            report = check(devices, work, args.flash_attn, args.no_tf32)
        except EnvironmentProblem as exc:
            if not exc.logged:
                log.error("%s", exc)
            names = (*requested.split(","), "", "")
            report = empty_report((names[0], names[1]), args.flash_attn, args.no_tf32)
            report["error"] = str(exc)
            sys.stdout.write(json.dumps(report) + "\n")
            return EXIT_ENVIRONMENT
        if args.work is None:
            report["work"] = None  # removed on exit
    sys.stdout.write(json.dumps(report) + "\n")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
