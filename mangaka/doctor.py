"""``python -m mangaka doctor``: what this machine's llama.cpp can do, and what is wrong, in plain
findings. Each finding has a severity (ok, info, warning, error) and one line of advice.

Checks: llama-cpp-python and its build (version, pinned version, system-info flags, GPU offload),
the architectures it can load (and a given model's), the memory a model at a context length needs
(weights + KV cache) against what is free, the CPU frequency governor, NUMA nodes, and where the
pack's LLM nodes will run. The system is read through ``sysfs`` and ``/proc/meminfo`` paths that
tests point at a crafted tree.
"""

from __future__ import annotations

import json
import logging
import math
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError, MangakaError, ModelFileError, UnsupportedArchitectureError
from .llm import native
from .llm.gguf_info import read_gguf_info
from .llm.loading import effective_n_ctx
from .llm.memory import COMFY_INFERENCE_RESERVE, Fit, kv_cache_bytes
from .llm.native import Device
from .llm.options import DEFAULT_N_CTX, LOAD_OPTIONS

log = logging.getLogger(__name__)

SEVERITIES = ("ok", "info", "warning", "error")
ARCHITECTURES = (
    "qwen35moe",
    "qwen3moe",
    "qwen3",
    "qwen2",
    "llama",
    "gemma3",
    "mistral3",
    "glm4moe",
    "deepseek2",
)


@dataclass(frozen=True)
class Finding:
    severity: str
    topic: str
    message: str
    advice: str = ""


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)

    def add(self, severity: str, topic: str, message: str, advice: str = "") -> None:
        self.findings.append(Finding(severity, topic, message, advice))

    @property
    def worst(self) -> str:
        return max((f.severity for f in self.findings), key=SEVERITIES.index, default="ok")

    def text(self) -> str:
        marks = {"ok": "ok  ", "info": "info", "warning": "WARN", "error": "FAIL"}
        lines = []
        for f in self.findings:
            lines.append(f"[{marks[f.severity]}] {f.topic}: {f.message}")
            if f.advice:
                lines.append(f"       → {f.advice}")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(
            {"worst": self.worst, "findings": [asdict(f) for f in self.findings]}, ensure_ascii=False
        )


@dataclass(frozen=True)
class System:
    """Where the machine is read from (a crafted tree in tests)."""

    sysfs: Path = Path("/sys")
    meminfo: Path = Path("/proc/meminfo")
    cpuinfo: Path = Path("/proc/cpuinfo")


# ggml's system-info names → the CPU flag in /proc/cpuinfo that the instructions need.
CPU_FLAGS = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
    "LSX": "lsx",
    "LASX": "lasx",
    "SVE": "sve",
    "DOTPROD": "asimddp",
}


def cpu_flags(system: System) -> set[str] | None:
    """The CPU's flags (x86 ``flags``, Arm/LoongArch ``Features``), or None when unreadable."""
    try:
        for line in system.cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.partition(":")[2].split())
    except OSError:
        return None
    return None


def mem_available(system: System) -> int | None:
    """Bytes of memory available (``MemAvailable``), or None when unknown."""
    try:
        for line in system.meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_governor(report: Report, system: System) -> None:
    files = sorted((system.sysfs / "devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))
    if not files:
        report.add("info", "CPU governor", "no cpufreq governor exposed (a VM or a fixed-frequency CPU)")
        return
    governors = {f.read_text().strip() for f in files}
    if governors == {"performance"}:
        report.add("ok", "CPU governor", f"performance on all {len(files)} CPUs")
    else:
        report.add(
            "warning",
            "CPU governor",
            f"{', '.join(sorted(governors))} on {len(files)} CPUs: token generation runs below full clock",
            "set it to performance while generating: `sudo cpupower frequency-set -g performance`",
        )


def check_numa(report: Report, system: System) -> None:
    nodes = sorted((system.sysfs / "devices/system/node").glob("node[0-9]*"))
    if len(nodes) <= 1:
        report.add("ok", "NUMA", "one memory node")
        return
    report.add(
        "warning",
        "NUMA",
        f"{len(nodes)} memory nodes: a model spread over them is read across the interconnect",
        "bind ComfyUI to one node: `numactl --cpunodebind=0 --membind=0 python main.py` "
        "(and set threads to that node's cores)",
    )


def check_build(report: Report, system: System | None = None) -> dict[str, Any]:
    """llama-cpp-python: installed, pinned version, CPU features (built with, and present on this
    CPU), GPU offload."""
    try:
        lib = native.import_llama_cpp()
    except MangakaError as exc:
        report.add(
            "error", "llama-cpp-python", str(exc), "python native/install.py --python <ComfyUI's python>"
        )
        return {}
    version = native.version()
    pinned = _pinned_version()
    if pinned and version != pinned:
        report.add(
            "warning",
            "llama-cpp-python",
            f"{version} installed; the pack is tested with {pinned}",
            f"python native/install.py --version {pinned}",
        )
    else:
        report.add("ok", "llama-cpp-python", f"{version} (llama.cpp vendored in it)")
    info = native.system_info()
    flags = {
        k.split(":")[-1].strip(): v.strip() for k, _, v in (p.partition("=") for p in info.split("|")) if v
    }
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64") and flags.get("AVX2") != "1":
        report.add(
            "warning", "CPU features", f"built without AVX2: {info}", "rebuild with python native/install.py"
        )
    elif machine.startswith("loongarch") and flags.get("LASX") != "1":
        report.add(
            "warning",
            "CPU features",
            f"built without LASX: {info}",
            "python native/install.py --target loongarch",
        )
    else:
        report.add("ok", "CPU features", info)
    check_cpu_has_build_features(report, flags, system or System())
    gpu = bool(lib.llama_supports_gpu_offload())
    return {"version": version, "gpu": gpu}


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f}"


def check_devices(report: Report, offload: bool, found: list[Device]) -> list[Device]:
    """GPU offload and the devices ggml sees; returns the GPUs the LLM nodes will use."""
    gpus = [d for d in found if d.is_gpu]
    if offload and gpus:
        names = ", ".join(f"{d.name} ({d.description})" for d in gpus)
        report.add("ok", "GPU offload", f"the LLM nodes run on {names} (GPU layers -1)")
    elif offload:
        report.add(
            "warning",
            "GPU offload",
            "this build can offload to a GPU but ggml sees none: the LLM nodes run on the CPU",
            "check that `nvidia-smi` lists the GPU (driver loaded, device visible to this process); "
            "a wheel built for a newer CUDA than the driver supports sees no GPU either: rebuild "
            "with python native/install.py --target cuda --rebuild",
        )
    else:
        report.add(
            "info",
            "GPU offload",
            "this build is CPU-only; the LLM nodes run on the CPU",
            "for an NVIDIA GPU: python native/install.py --target cuda",
        )
    if found:
        listing = "; ".join(
            f"{d.name} ({d.kind}, {d.description}): {_gib(d.free)} of {_gib(d.total)} GiB free" for d in found
        )
        report.add("info", "devices", listing)
    return gpus if offload else []


def check_cpu_has_build_features(report: Report, built: dict[str, str], system: System) -> None:
    """A build that uses instructions this CPU lacks dies with SIGILL at the first token."""
    have = cpu_flags(system)
    if have is None:
        return
    used = [name for name, on in built.items() if on == "1" and name in CPU_FLAGS]
    missing = [name for name in used if CPU_FLAGS[name] not in have]
    if missing:
        report.add(
            "error",
            "CPU support",
            f"the build uses {', '.join(missing)}, which this CPU lacks: the LLM nodes would crash "
            "(illegal instruction) at the first token",
            "rebuild on this machine: python native/install.py --target cpu --rebuild "
            "(without AVX2 it builds for this CPU)",
        )
    elif used:
        report.add(
            "ok", "CPU support", f"this CPU has every instruction set the build uses ({', '.join(used)})"
        )


def check_architectures(report: Report, model: Path | None) -> None:
    known = [a for a in ARCHITECTURES if native.knows_architecture(a)]
    report.add("info", "architectures", f"this build loads, among others: {', '.join(known)}")
    if model is None:
        return
    try:
        info = read_gguf_info(model)
        native.check_architecture(info.architecture, model.name)
    except MangakaError as exc:
        report.add("error", "model", str(exc), _MODEL_ADVICE.get(type(exc), _MODEL_ADVICE[MangakaError]))
        return
    size = model.stat().st_size
    report.add(
        "ok",
        "model",
        f"{model.name}: {info.architecture}, {info.tensor_count} tensors, "
        f"{_gib(size)} GiB, complete, loadable",
    )


# What to do about a model the doctor cannot pass, by the kind of error.
_MODEL_ADVICE: dict[type, str] = {
    ModelFileError: "this file is damaged or incomplete (or not a model): download or copy it again, "
    "or pick another model",
    UnsupportedArchitectureError: "rebuild llama-cpp-python as the message says, or pick another model",
    MangakaError: "pick another model",
}


def check_context(report: Report, model: Path | None, n_ctx: int) -> int:
    """The context the model would be loaded with (``n_ctx`` capped at its trained length, the rule
    ``write`` and Load LLM apply), noted when the cap applies; the memory checks use it."""
    if model is None:
        return n_ctx
    try:
        used = effective_n_ctx(read_gguf_info(model), n_ctx)
    except (MangakaError, OSError):
        return n_ctx  # the model finding says why
    if used < n_ctx:
        trained = f"{model.name} was trained on {used} tokens, so it loads with {used}"
        report.add("info", "context", f"{n_ctx} tokens asked; {trained}")
    return used


def memory_needed(model: Path, n_ctx: int) -> tuple[int, int]:
    """(weights bytes, KV-cache bytes at ``n_ctx`` in f16) for a GGUF model; hybrid models count
    only their attention layers (``full_attention_interval``)."""
    return model.stat().st_size, kv_cache_bytes(read_gguf_info(model), n_ctx)


def check_memory(
    report: Report, model: Path | None, n_ctx: int, system: System, gpus: list[Device] | None = None
) -> None:
    """Weights + KV cache against the GPUs' free memory when the nodes run there, else against
    the available RAM."""
    free = mem_available(system)
    if model is not None and gpus:
        check_vram(report, model, n_ctx, gpus)
        return
    if model is None:
        if free is not None:
            report.add("info", "memory", f"{free / 2**30:.1f} GiB available")
        return
    try:
        weights, kv = memory_needed(model, n_ctx)
    except (MangakaError, OSError) as exc:
        report.add("error", "memory", f"cannot read {model.name}: {exc}")
        return
    need = weights + kv
    what = (
        f"{model.name} at {n_ctx} tokens needs {need / 2**30:.2f} GiB "
        f"({weights / 2**30:.2f} weights + {kv / 2**30:.2f} KV cache)"
    )
    if free is None:
        report.add("info", "memory", what + "; available memory unknown")
    elif need > free:
        fit = max(0, int((free - weights) / max(1, kv / n_ctx)))
        report.add(
            "error",
            "memory",
            f"{what}, but only {free / 2**30:.2f} GiB is available",
            f"lower the context to about {fit} tokens, offload layers to a GPU, or use a smaller "
            "quantisation",
        )
    elif need > 0.8 * free:
        report.add(
            "warning",
            "memory",
            f"{what} of {free / 2**30:.2f} GiB available",
            "little room is left for ComfyUI's image models",
        )
    else:
        report.add("ok", "memory", f"{what} of {free / 2**30:.2f} GiB available")


def check_vram(report: Report, model: Path, n_ctx: int, gpus: list[Device]) -> None:
    try:
        weights, kv = memory_needed(model, n_ctx)
        info = read_gguf_info(model)
    except (MangakaError, OSError) as exc:
        report.add("error", "memory", f"cannot read {model.name}: {exc}")
        return
    layers = int(info.metadata.get(f"{info.architecture}.block_count", 0) or 0)
    free = sum(d.free for d in gpus)
    need = weights + kv
    what = (
        f"{model.name} at {n_ctx} tokens needs {need / 2**30:.2f} GiB "
        f"({weights / 2**30:.2f} weights + {kv / 2**30:.2f} KV cache)"
    )
    on = f"{free / 2**30:.2f} GiB free on {', '.join(d.name for d in gpus)}"
    if need <= free:
        report.add("ok", "memory", f"{what} of {on}")
        return
    fit = max(0, int(layers * (free - kv) / weights)) if weights and layers else 0
    report.add(
        "warning",
        "memory",
        f"{what}, but only {on}: with GPU layers -1 loading fails or spills, and what does not fit "
        "runs on the CPU",
        f"set GPU layers to about {fit} of {layers} in Load LLM, or lower the context, or use a "
        "smaller quantisation",
    )


@dataclass(frozen=True)
class Checkpoint:
    """An image model's checkpoint for the memory check: a name to print and its bytes."""

    name: str
    size: int


def read_checkpoint(value: str | Path, label: str = "--checkpoint") -> Checkpoint:
    """``value`` as a checkpoint: a number of GiB, or a .safetensors file (its size read from the
    file, its header checked). A bad value is an ``InputError`` naming ``label``."""
    text = str(value).strip()
    try:
        gib = float(text)
    except ValueError:
        return _checkpoint_file(Path(text).expanduser(), label)
    if not math.isfinite(gib) or gib <= 0 or gib > 4096:
        raise InputError(
            f"{label} must be a size in GiB above 0 (like 6.5) or a .safetensors file, got {text}"
        )
    return Checkpoint("the checkpoint", int(gib * 2**30))


def _checkpoint_file(path: Path, label: str) -> Checkpoint:
    if path.is_dir():
        raise InputError(f"{label} {path} is a folder; give the .safetensors file, or its size in GiB")
    if not path.is_file():
        raise InputError(f"{label} {path} is not a number of GiB and no such file; give the checkpoint's "
                         "path (.safetensors) or its size in GiB, like 6.5")  # fmt: skip
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            head = f.read(9)
    except OSError as exc:
        raise InputError(f"{label} {path} cannot be read ({exc.strerror}); check its permissions") from None
    header = int.from_bytes(head[:8], "little") if len(head) == 9 else 0
    if path.suffix.lower() != ".safetensors" or not 0 < header < size or head[8:9] != b"{":
        raise InputError(
            f"{label} {path} is not a .safetensors checkpoint; give one (ComfyUI's models/checkpoints) "
            "or its size in GiB"
        )
    return Checkpoint(path.name, size)


def check_checkpoint(
    report: Report, model: Path | None, n_ctx: int, checkpoint: Checkpoint, free: int | None, where: str
) -> Fit | None:
    """The LLM (weights + KV cache) and an image checkpoint (+ ComfyUI's inference reserve)
    against ``free`` bytes on the device the LLM uses (``where`` names it: "on CUDA0", "in RAM")."""
    if model is None:
        report.add("info", "with checkpoint", f"{checkpoint.name}: give --model to check both fit")
        return None
    try:
        weights, kv = memory_needed(model, n_ctx)
    except (MangakaError, OSError) as exc:
        report.add("error", "with checkpoint", f"cannot read {model.name}: {exc}")
        return None
    if free is None:
        report.add("info", "with checkpoint", f"free memory {where} unknown; cannot check the fit")
        return None
    fit = Fit(weights + kv, checkpoint.size, COMFY_INFERENCE_RESERVE, free)
    what = (
        f"{model.name} at {n_ctx} tokens ({_gib(fit.llm)} GiB) + {checkpoint.name} ({_gib(fit.checkpoint)}"
        f" GiB) + ComfyUI's {_gib(fit.reserve)} GiB to sample = {_gib(fit.together)} GiB"
    )
    on = f"{_gib(free)} GiB free {where}"
    if fit.fits:
        report.add("ok", "with checkpoint", f"{what}: both fit in {on}")
    elif fit.fits_alone:
        report.add(
            "warning",
            "with checkpoint",
            f"{what}, but only {on}: each fits alone, not both",
            "set Load LLM's memory to `release after each run` (with `keep loaded` the LLM is freed "
            "when ComfyUI needs the room and loaded again for the next page), or fewer GPU layers, "
            "or a smaller quantisation",
        )
    else:
        report.add(
            "error",
            "with checkpoint",
            f"{what}, but only {on}: even one of them alone does not fit",
            "fewer GPU layers in Load LLM (the rest runs on the CPU), a smaller quantisation, or a "
            "smaller checkpoint",
        )
    return fit


def _pinned_version() -> str | None:
    script = Path(__file__).resolve().parent.parent / "native" / "install.py"
    try:
        for line in script.read_text(encoding="utf-8").splitlines():
            if line.startswith("PINNED_VERSION"):
                return line.split("=", 1)[1].strip().strip("\"'")
    except OSError:
        return None
    return None


def diagnose(
    model: Path | None = None,
    n_ctx: int = DEFAULT_N_CTX,
    system: System | None = None,
    devices: list[Device] | None = None,
    checkpoint: Checkpoint | None = None,
) -> Report:
    """Every finding, in a fixed order. ``devices`` defaults to the ones ggml sees (tests pass
    crafted ones); with a ``checkpoint``, whether it and the model fit together where the LLM runs
    (the GPUs ggml sees, or RAM on a CPU-only build)."""
    LOAD_OPTIONS["n_ctx"].check(n_ctx, "doctor --ctx")  # the Load LLM node's range
    system = system or System()
    report = Report()
    build = check_build(report, system)
    gpus: list[Device] = []
    if build:
        try:
            found = native.devices() if devices is None else devices
        except (MangakaError, OSError, AttributeError) as exc:
            report.add("warning", "devices", f"cannot list ggml's devices: {exc}")
            found = []
        gpus = check_devices(report, build["gpu"], found)
    if report.worst != "error":
        check_architectures(report, model)
    n_ctx = check_context(report, model, n_ctx)
    check_memory(report, model, n_ctx, system, gpus)
    if checkpoint is not None:
        if gpus:
            free, where = sum(d.free for d in gpus), "on " + ", ".join(d.name for d in gpus)
        else:
            free, where = mem_available(system), "in RAM (this build runs the LLM on the CPU)"
        check_checkpoint(report, model, n_ctx, checkpoint, free, where)
    check_governor(report, system)
    check_numa(report, system)
    return report
