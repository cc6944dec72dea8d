#!/usr/bin/env python3
"""Build and install a pinned llama-cpp-python for this machine, with a wheel cache.

    python native/install.py                      # auto: cuda if a GPU toolkit is found, else cpu
    python native/install.py --target cuda --cuda-arch 90
    python native/install.py --target loongarch   # on loongarch64 (LSX + LASX)
    python native/install.py --python /path/to/venv/bin/python

The wheel is cached under ``$MANGAKA_CACHE`` (default ``~/.cache/mangaka``) in a folder keyed by
the llama-cpp-python version, the target, the CMake flags, the Python tag and the platform, so a
second install on the same machine takes seconds. After installing, the script imports the
library in the target interpreter, prints its system-info line and fails loudly when the build
does not show the features the target asked for.

Standard library only: this runs before any virtual environment has packages.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path rather than run
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import native_common

try:
    import fcntl
except ImportError:  # Windows: no lock (one install at a time there)
    fcntl = None  # type: ignore[assignment]
from native_common import procs

log = logging.getLogger("mangaka.native")

PINNED_VERSION = "0.3.36"
TARGETS = ("cpu", "cuda", "loongarch", "metal")

# Flags per target. "cpu" is portable: no -march=native, but AVX/AVX2/FMA/F16C on (ggml turns
# them on when GGML_NATIVE is OFF on x86-64), so the wheel runs on any x86-64 with AVX2
# (native/cpu_check.py proves it under qemu). On an x86-64 without AVX2 such a wheel would die
# with SIGILL at the first token, so there the "cpu" target builds for this CPU instead.
CMAKE_FLAGS: dict[str, list[str]] = {
    "cpu": ["-DGGML_NATIVE=OFF"],
    "cuda": ["-DGGML_NATIVE=OFF", "-DGGML_CUDA=ON"],
    "loongarch": ["-DGGML_NATIVE=OFF", "-DGGML_LSX=ON", "-DGGML_LASX=ON"],
    "metal": ["-DGGML_METAL=ON"],
}
# What the library's system-info line must show after install, per target.
EXPECTED_FEATURES: dict[str, dict[str, list[str]]] = {
    "cpu": {"x86_64": ["AVX2 = 1"], "aarch64": ["NEON = 1"], "arm64": ["NEON = 1"]},
    "cuda": {},
    "loongarch": {"loongarch64": ["LSX = 1", "LASX = 1"]},
    "metal": {},
}
GPU_TARGETS = ("cuda", "metal")


class InstallError(RuntimeError):
    """A build or check failed; the message says what and what to do."""


def detect_target() -> str:
    machine = platform.machine().lower()
    if machine == "loongarch64":
        return "loongarch"
    if sys.platform == "darwin" and machine == "arm64":
        return "metal"
    if shutil.which("nvcc") and shutil.which("nvidia-smi"):
        return "cuda"
    return "cpu"


def detect_cuda_arch() -> str | None:
    """Compute capability of the first GPU, e.g. '90' for an H100/H200, or None."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = procs.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    caps = sorted({line.strip().replace(".", "") for line in out.splitlines() if line.strip()})
    return ";".join(caps) or None


def host_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str] | None:
    """The CPU's feature flags (``avx2``, ``fma``…) from ``/proc/cpuinfo``; None when unreadable."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.partition(":")[2].split())
    except OSError:
        return None
    return None


def lacks_avx2(cpu_flags: set[str] | None = None) -> bool:
    """True on an x86-64 whose CPU is known not to have AVX2 (the portable wheel's floor)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    flags = host_cpu_flags() if cpu_flags is None else cpu_flags
    return flags is not None and "avx2" not in flags


def cmake_flags(target: str, cuda_arch: str | None, cpu_flags: set[str] | None = None) -> list[str]:
    if target == "cpu" and lacks_avx2(cpu_flags):
        log.warning(
            "this CPU has no AVX2, which the portable wheel needs: building for this CPU only "
            "(-DGGML_NATIVE=ON); the wheel will not be portable"
        )
        return ["-DGGML_NATIVE=ON"]
    flags = list(CMAKE_FLAGS[target])
    if target == "cuda":
        arch = cuda_arch or detect_cuda_arch()
        if arch:
            flags.append(f"-DCMAKE_CUDA_ARCHITECTURES={arch}")
    return flags


def python_tag(python: str) -> str:
    code = (
        "import sys, sysconfig; "
        "print(f'cp{sys.version_info[0]}{sys.version_info[1]}-' + sysconfig.get_platform())"
    )
    return procs.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def cache_dir(root: Path, version: str, target: str, flags: list[str], pytag: str) -> Path:
    key = json.dumps({"v": version, "t": target, "f": sorted(flags), "py": pytag}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return root / "wheels" / f"llama_cpp_python-{version}" / f"{target}-{pytag}-{digest}"


def build_wheel(python: str, version: str, flags: list[str], dest: Path) -> Path:
    """Compile llama-cpp-python from the PyPI sdist; move the wheel into ``dest`` atomically."""
    env = dict(os.environ)
    env["CMAKE_ARGS"] = " ".join(flags)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mangaka-wheel-", dir=dest.parent) as tmp:
        # --no-cache-dir: pip's own wheel cache is keyed by the sdist, not by CMAKE_ARGS, and would
        # hand a CPU wheel to a CUDA build.
        cmd = [
            python,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-cache-dir",
            "--no-binary",
            "llama-cpp-python",
            f"llama-cpp-python=={version}",
            "-w",
            tmp,
        ]
        log.info(
            "building llama-cpp-python %s with CMAKE_ARGS=%r (several minutes on a CPU)",
            version,
            env["CMAKE_ARGS"],
        )
        started = time.monotonic()
        proc = procs.run(cmd, env=env)
        if proc.returncode != 0:
            raise InstallError(
                f"building llama-cpp-python {version} failed (exit {proc.returncode}) with "
                f"CMAKE_ARGS={env['CMAKE_ARGS']!r}. It needs cmake >= 3.21, ninja and a C++ "
                "compiler (and the CUDA toolkit for --target cuda); the compiler output is above."
            )
        wheels = list(Path(tmp).glob("llama_cpp_python-*.whl"))
        if len(wheels) != 1:
            raise InstallError(f"expected one wheel in {tmp}, found {wheels}")
        staged = Path(tmp) / "staged"
        staged.mkdir()
        shutil.move(str(wheels[0]), staged / wheels[0].name)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staged, dest)  # the cache folder appears whole or not at all
        log.info("built in %.0f s: %s", time.monotonic() - started, dest)
    return next(dest.glob("*.whl"))


def expected_features(target: str, flags: list[str] | None = None) -> list[str]:
    """What the system-info line must show for ``target`` built with ``flags`` on this machine."""
    if target == "cpu" and flags is not None and "-DGGML_NATIVE=ON" in flags:
        return []  # built for this CPU, whatever it has
    return EXPECTED_FEATURES[target].get(platform.machine().lower(), [])


# Run in the target interpreter: version, system info, offload, and the devices ggml registered
# (ggml_backend_dev_*, which llama-cpp-python does not bind: read through ctypes).
CHECK = """
import ctypes, json, pathlib, llama_cpp
lib = pathlib.Path(llama_cpp.__file__).parent / "lib"
devices = []
for name in ("libggml.so", "libggml.dylib", "ggml.dll"):
    if (lib / name).is_file():
        ggml = ctypes.CDLL(str(lib / name))
        ggml.ggml_backend_dev_get.restype = ctypes.c_void_p
        ggml.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
        ggml.ggml_backend_dev_count.restype = ctypes.c_size_t
        ggml.ggml_backend_dev_name.restype = ctypes.c_char_p
        ggml.ggml_backend_dev_name.argtypes = [ctypes.c_void_p]
        ggml.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
        for i in range(ggml.ggml_backend_dev_count()):
            dev = ggml.ggml_backend_dev_get(i)
            kind = ("cpu", "gpu", "igpu", "accel")[ggml.ggml_backend_dev_type(dev)]
            devices.append({"name": ggml.ggml_backend_dev_name(dev).decode(), "kind": kind})
        break
print(json.dumps({"version": llama_cpp.__version__,
    "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
    "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()), "devices": devices}))
"""


def judge(info: dict, target: str, flags: list[str] | None = None, need_gpu: bool = True) -> str:
    """The verdict on an installed build's facts (``CHECK``'s output): a line, or InstallError."""
    missing = [f for f in expected_features(target, flags) if f not in info["system_info"]]
    if missing:
        raise InstallError(
            f"the {target} build lacks {', '.join(missing)} in its system info: {info['system_info']}"
        )
    if target in GPU_TARGETS and not info["gpu_offload"]:
        raise InstallError(
            f"the {target} build came out CPU-only (llama_supports_gpu_offload() is false). "
            "Check that the toolkit was found at build time, then rerun with --rebuild."
        )
    gpus = [d["name"] for d in info.get("devices", []) if d["kind"] in ("gpu", "igpu")]
    if target in GPU_TARGETS and not gpus and need_gpu:
        raise InstallError(
            f"the {target} build can offload but sees no GPU: the driver is missing or older than "
            "the toolkit the wheel was built with (`nvidia-smi` shows the newest CUDA the driver "
            "runs). Update the driver, or build with the toolkit that matches it. (Building on a "
            "machine without the GPU: --no-gpu-check.)"
        )
    on = f", GPUs: {', '.join(gpus)}" if gpus else ""
    return (
        f"llama-cpp-python {info['version']} ({target}, gpu offload: {info['gpu_offload']}{on}): "
        f"{info['system_info']}"
    )


def check_install(python: str, target: str, flags: list[str] | None = None, need_gpu: bool = True) -> str:
    """Import the library in ``python``; return its system-info line or raise InstallError."""
    proc = procs.run([python, "-c", CHECK], capture_output=True, text=True)
    if proc.returncode != 0:
        raise InstallError(f"the installed llama-cpp-python does not import:\n{proc.stderr.strip()}")
    return judge(json.loads(proc.stdout.strip().splitlines()[-1]), target, flags, need_gpu)


def install(
    python: str,
    target: str,
    version: str,
    cuda_arch: str | None,
    cache_root: Path,
    rebuild: bool,
    need_gpu: bool = True,
) -> str:
    flags = cmake_flags(target, cuda_arch)
    folder = cache_dir(cache_root, version, target, flags, python_tag(python))
    folder.parent.mkdir(parents=True, exist_ok=True)
    # One build per cache folder: a second installer (ComfyUI's venv set up beside the pack's)
    # waits for the first and then installs the wheel it built.
    with open(folder.parent / f".{folder.name}.lock", "a") as lock:
        if fcntl is not None and (not sorted(folder.glob("*.whl")) or rebuild):
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log.info("another install is building this wheel; waiting for it (%s)", folder)
                fcntl.flock(lock, fcntl.LOCK_EX)
        wheels = sorted(folder.glob("*.whl"))
        if wheels and not rebuild:
            wheel = wheels[0]
            log.info("using cached wheel %s", wheel)
        else:
            wheel = build_wheel(python, version, flags, folder)
    cmd = [python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", str(wheel)]
    if procs.run(cmd).returncode != 0:
        raise InstallError(f"pip could not install {wheel}")
    # The wheel's own dependencies, without touching anything already satisfied.
    deps = ["typing-extensions>=4.5.0", "numpy>=1.20.0", "diskcache>=5.6.1", "jinja2>=2.11.3"]
    if procs.run([python, "-m", "pip", "install", "--quiet", *deps]).returncode != 0:
        raise InstallError("pip could not install llama-cpp-python's dependencies")
    return check_install(python, target, flags, need_gpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("auto", *TARGETS), default="auto")
    parser.add_argument("--version", default=PINNED_VERSION, help="llama-cpp-python version")
    parser.add_argument("--cuda-arch", help="CUDA architectures, e.g. 86 or '80;90' (default: the GPU's)")
    parser.add_argument("--python", default=sys.executable, help="interpreter to install into")
    parser.add_argument(
        "--cache",
        type=Path,
        default=native_common.cache_root(),
    )
    parser.add_argument("--rebuild", action="store_true", help="ignore the cached wheel")
    parser.add_argument(
        "--no-gpu-check",
        action="store_true",
        help="cuda/metal built on a machine without the GPU: do not require one to be seen",
    )
    parser.add_argument("--print-key", action="store_true", help="print the cache folder and exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="native: %(message)s")
    target = detect_target() if args.target == "auto" else args.target
    if args.print_key:
        flags = cmake_flags(target, args.cuda_arch)
        sys.stdout.write(f"{cache_dir(args.cache, args.version, target, flags, python_tag(args.python))}\n")
        return 0
    try:
        line = install(
            args.python,
            target,
            args.version,
            args.cuda_arch,
            args.cache,
            args.rebuild,
            need_gpu=not args.no_gpu_check,
        )
    except InstallError as exc:
        log.error("%s", exc)
        return 1
    log.info("%s", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
