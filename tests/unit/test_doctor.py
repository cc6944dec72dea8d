"""``python -m mangaka doctor`` on crafted inputs: a fake sysfs tree (governor, NUMA), a fake
/proc/meminfo, a GGUF of an unknown architecture, a context too big for the memory."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mangaka.devtools.tiny_models import write_model, write_unsupported_model
from mangaka.doctor import (
    CPU_FLAGS,
    Checkpoint,
    Report,
    System,
    check_checkpoint,
    check_devices,
    check_memory,
    diagnose,
    memory_needed,
    read_checkpoint,
)
from mangaka.errors import InputError
from mangaka.llm.memory import COMFY_INFERENCE_RESERVE
from mangaka.llm.native import Device

ROOT = Path(__file__).resolve().parents[2]


def fake_system(tmp: Path, governors: list[str], numa_nodes: int, available_kib: int) -> System:
    sysfs = tmp / "sys"
    for i, governor in enumerate(governors):
        folder = sysfs / f"devices/system/cpu/cpu{i}/cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_governor").write_text(governor + "\n")
    for n in range(numa_nodes):
        (sysfs / f"devices/system/node/node{n}").mkdir(parents=True)
    meminfo = tmp / "meminfo"
    meminfo.write_text(f"MemTotal:       {available_kib * 2} kB\nMemAvailable:   {available_kib} kB\n")
    return System(sysfs, meminfo)


def by_topic(report) -> dict:
    return {f.topic: f for f in report.findings}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_model(tmp_path_factory.mktemp("doctor") / "tiny.gguf", "qwen35moe", context_length=32768)


def test_powersave_governor_and_two_numa_nodes_are_warnings_with_advice(tmp_path):
    report = diagnose(system=fake_system(tmp_path, ["powersave", "powersave", "performance"], 2, 8 << 20))
    found = by_topic(report)
    assert found["CPU governor"].severity == "warning" and "performance" in found["CPU governor"].advice
    assert "powersave" in found["CPU governor"].message
    assert found["NUMA"].severity == "warning" and "numactl" in found["NUMA"].advice
    good = by_topic(diagnose(system=fake_system(tmp_path / "good", ["performance"] * 2, 1, 8 << 20)))
    assert good["CPU governor"].severity == good["NUMA"].severity == "ok"


def test_a_model_of_an_unknown_architecture_is_an_error_naming_it(tmp_path):
    model = write_unsupported_model(tmp_path / "future.gguf")
    report = diagnose(model, system=fake_system(tmp_path, ["performance"], 1, 8 << 20))
    finding = by_topic(report)["model"]
    assert finding.severity == "error" and "qwen99moe" in finding.message and "cannot load" in finding.message
    assert report.worst == "error"


def test_a_context_too_big_for_the_memory_is_an_error_with_a_context_that_fits(tiny, tmp_path):
    weights, kv = memory_needed(tiny, 32768)
    # hybrid: 4 blocks, one attention layer in four → 1 layer × 32768 × 2 heads × (16 + 16) × 2 bytes
    assert kv == 1 * 32768 * 2 * 32 * 2 and weights == tiny.stat().st_size
    available_kib = (weights + kv // 2) // 1024  # room for half the KV cache
    finding = by_topic(diagnose(tiny, 32768, fake_system(tmp_path, ["performance"], 1, available_kib)))[
        "memory"
    ]
    assert finding.severity == "error" and "lower the context to about" in finding.advice
    fits = int(finding.advice.split("about ")[1].split()[0])
    assert 15000 < fits < 16500
    ok = by_topic(diagnose(tiny, 1024, fake_system(tmp_path / "big", ["performance"], 1, 8 << 20)))["memory"]
    assert ok.severity == "ok"


def test_the_command_prints_findings_and_json():
    run = subprocess.run(
        [sys.executable, "-m", "mangaka", "doctor", "--json"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    topics = [f["topic"] for f in data["findings"]]
    assert topics[:4] == ["llama-cpp-python", "CPU features", "CPU support", "GPU offload"]
    assert all(f["severity"] in ("ok", "info", "warning", "error") for f in data["findings"])


def test_a_build_using_instructions_the_cpu_lacks_is_an_error(tmp_path):
    from mangaka.llm import native

    built = {
        k.strip(): v.strip() for k, _, v in (p.partition("=") for p in native.system_info().split("|")) if v
    }
    used = {name for name, on in built.items() if on == "1" and name in CPU_FLAGS}
    if not used:
        pytest.skip(f"this build reports no CPU instruction set the doctor knows: {built}")
    system = fake_system(tmp_path, ["performance"], 1, 8 << 20)
    cpuinfo = tmp_path / "cpuinfo"
    # A CPU with none of them (x86 names "flags", Arm and LoongArch "Features").
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2\nFeatures\t: fp\n")
    finding = by_topic(diagnose(system=dataclasses.replace(system, cpuinfo=cpuinfo)))["CPU support"]
    assert finding.severity == "error" and "illegal instruction" in finding.message
    assert all(name in finding.message for name in used) and "native/install.py" in finding.advice
    # This machine's own CPU runs this build (the tests are running on it).
    assert by_topic(diagnose(system=system))["CPU support"].severity == "ok"
    # cpuinfo unreadable: no finding rather than a guess.
    gone = dataclasses.replace(system, cpuinfo=tmp_path / "missing")
    assert "CPU support" not in by_topic(diagnose(system=gone))


CPU = Device("CPU", "AMD EPYC", "cpu", 20 << 30, 24 << 30)
GPU = Device("CUDA0", "NVIDIA H200", "gpu", 130 << 30, 140 << 30)


def test_gpu_offload_with_and_without_a_gpu_device():
    report = Report()
    assert check_devices(report, True, [CPU, GPU]) == [GPU]
    found = by_topic(report)
    assert found["GPU offload"].severity == "ok" and "CUDA0 (NVIDIA H200)" in found["GPU offload"].message
    assert "CUDA0 (gpu, NVIDIA H200): 130.0 of 140.0 GiB free" in found["devices"].message
    # A CUDA build whose driver is missing (or too old for the wheel's CUDA) registers no GPU.
    report = Report()
    assert check_devices(report, True, [CPU]) == []
    finding = by_topic(report)["GPU offload"]
    assert finding.severity == "warning" and "sees none" in finding.message and "nvidia-smi" in finding.advice
    report = Report()
    assert check_devices(report, False, [CPU]) == []
    assert by_topic(report)["GPU offload"].severity == "info"


def test_a_model_too_big_for_the_gpus_says_how_many_layers_fit(tiny, tmp_path):
    weights, kv = memory_needed(tiny, 32768)
    system = fake_system(tmp_path, ["performance"], 1, 8 << 20)
    small = Device("CUDA0", "small GPU", "gpu", kv + weights // 2, 1 << 30)
    report = Report()
    check_memory(report, tiny, 32768, system, [small])
    finding = by_topic(report)["memory"]
    assert finding.severity == "warning" and "free on CUDA0" in finding.message
    assert "GPU layers to about 2 of 4" in finding.advice  # half the weights fit: 2 of the 4 blocks
    report = Report()
    check_memory(report, tiny, 32768, system, [GPU])
    assert (
        by_topic(report)["memory"].severity == "ok" and "free on CUDA0" in by_topic(report)["memory"].message
    )


def test_this_machines_devices_are_listed_with_their_memory(tmp_path):
    found = by_topic(diagnose(system=fake_system(tmp_path, ["performance"], 1, 8 << 20)))["devices"]
    assert found.severity == "info" and "CPU (cpu, " in found.message and "GiB free" in found.message


def _safetensors(path: Path, payload: bytes = b"\0" * 4096) -> Path:
    header = b'{"__metadata__": {}}'
    path.write_bytes(len(header).to_bytes(8, "little") + header + payload)
    return path


def test_a_checkpoint_is_a_safetensors_file_or_a_size_in_gib(tmp_path):
    ckpt = _safetensors(tmp_path / "sd_xl_base_1.0.safetensors")
    assert read_checkpoint(ckpt) == Checkpoint("sd_xl_base_1.0.safetensors", ckpt.stat().st_size)
    assert read_checkpoint("6.5") == Checkpoint("the checkpoint", int(6.5 * 2**30))


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "above 0"),
        ("-2", "above 0"),
        ("nan", "above 0"),
        ("missing.safetensors", "no such file"),
        (".", "is a folder"),
        ("model.gguf", "not a .safetensors checkpoint"),
        ("broken.safetensors", "not a .safetensors checkpoint"),
    ],
)
def test_a_bad_checkpoint_is_refused_naming_the_option(value, says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.gguf").write_bytes(b"GGUF" + b"\0" * 64)
    (tmp_path / "broken.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(InputError, match="--checkpoint") as caught:
        read_checkpoint(value)
    assert says in str(caught.value)


def test_the_command_refuses_a_bad_checkpoint_before_diagnosing(tmp_path, caplog):
    from mangaka.cli.main import main

    assert main(["doctor", "--checkpoint", str(tmp_path / "nope.safetensors")]) == 1
    assert "--checkpoint" in caplog.text and "no such file" in caplog.text


def test_an_llm_and_a_checkpoint_fit_together_alone_or_not_at_all(tiny):
    weights, kv = memory_needed(tiny, 32768)
    checkpoint = Checkpoint("sdxl.safetensors", 7 << 30)

    def finding(free: int):
        report = Report()
        fit = check_checkpoint(report, tiny, 32768, checkpoint, free, "on CUDA0")
        assert fit is not None and fit.llm == weights + kv and fit.reserve == COMFY_INFERENCE_RESERVE
        return by_topic(report)["with checkpoint"]

    need = weights + kv + (7 << 30) + COMFY_INFERENCE_RESERVE
    together = finding(need)
    assert (
        together.severity == "ok" and "both fit" in together.message and "free on CUDA0" in together.message
    )
    alone = finding(need - 1)
    assert alone.severity == "warning" and "each fits alone" in alone.message
    assert "release after each run" in alone.advice and "GPU layers" in alone.advice
    neither = finding((7 << 30) + COMFY_INFERENCE_RESERVE - 1)
    assert neither.severity == "error" and "smaller quantisation" in neither.advice


def test_on_a_cpu_only_build_the_checkpoint_is_checked_against_ram(tiny, tmp_path):
    system = fake_system(tmp_path, ["performance"], 1, 64 << 20)  # 64 GiB available
    found = by_topic(diagnose(tiny, 4096, system, [CPU], checkpoint=read_checkpoint("6.5")))
    assert found["with checkpoint"].severity == "ok" and "RAM" in found["with checkpoint"].message
    without_model = by_topic(diagnose(None, 4096, system, [CPU], checkpoint=read_checkpoint("6.5")))
    assert "give --model" in without_model["with checkpoint"].message


# --- issue 19: files that are not loadable, and option values that are not contexts ---------------


def _damaged(tiny: Path, tmp_path: Path) -> dict[str, Path]:
    whole = tiny.read_bytes()
    cut = tmp_path / "first-half.gguf"  # as a download stopped at 50 MB of a bigger file
    cut.write_bytes(whole[: len(whole) // 2])
    patched = bytearray(whole)
    patched[8:16] = (2**63 - 1).to_bytes(8, "little")  # the tensor count
    counted = tmp_path / "count.gguf"
    counted.write_bytes(bytes(patched))
    return {"truncated": cut, "tensor count": counted}


@pytest.mark.parametrize("kind", ["truncated", "tensor count"])
def test_a_damaged_model_is_an_error_saying_so_not_loadable(kind, tiny, tmp_path):
    model = _damaged(tiny, tmp_path)[kind]
    report = diagnose(model, 4096, fake_system(tmp_path, ["performance"], 1, 8 << 20))
    finding = by_topic(report)["model"]
    assert finding.severity == "error" and "loadable" not in finding.message
    assert "this file is damaged or incomplete" in finding.message
    assert "download or copy it again" in finding.advice and "rebuild" not in finding.advice
    assert report.worst == "error"


def test_a_complete_model_is_loadable(tiny, tmp_path):
    finding = by_topic(diagnose(tiny, 4096, fake_system(tmp_path, ["performance"], 1, 8 << 20)))["model"]
    assert finding.severity == "ok" and "complete, loadable" in finding.message


@pytest.mark.parametrize("ctx", [-5, 0, 511, 262145])
def test_a_context_out_of_the_load_llm_range_is_refused(ctx, tmp_path):
    with pytest.raises(InputError, match=rf"doctor --ctx must be from 512 to 262144 tokens, got {ctx}"):
        diagnose(None, ctx, fake_system(tmp_path, ["performance"], 1, 8 << 20))


def test_the_memory_estimate_uses_the_trained_context_cap_as_write_does(tmp_path):
    model = write_model(tmp_path / "short.gguf", "qwen35moe", context_length=4096)
    report = by_topic(diagnose(model, 32768, fake_system(tmp_path, ["performance"], 1, 8 << 20)))
    assert "trained on 4096 tokens, so it loads with 4096" in report["context"].message
    assert "at 4096 tokens needs" in report["memory"].message
    weights, kv = memory_needed(model, 4096)
    assert f"{(weights + kv) / 2**30:.2f} GiB" in report["memory"].message
