#!/usr/bin/env python3
"""Build llama.cpp's own ``llama-bench`` from the llama-cpp-python sdist, with the wheel's flags.

    python native/llama_bench.py                      # build (or reuse) and print the binary's path
    python native/llama_bench.py --print-path         # print the cached path; exit 1 if not built
    python native/llama_bench.py --target cuda --cuda-arch 90
    python native/llama_bench.py --model M.gguf --threads 2 --n-gen 128   # also run it, print JSON
    python native/llama_bench.py --link-wheel     # link to the installed wheel's libllama/libggml

The llama.cpp source is the one vendored in the llama-cpp-python sdist of the same version as the
wheel (default: native/install.py's pinned version), configured with the same ggml flags as the
wheel for the target (native/install.py's ``CMAKE_FLAGS``), so that ``tg`` from this binary is the
bare-C ceiling for what the Python binding can reach on this machine. With ``--link-wheel`` only
llama-bench's own code (common/, tools/llama-bench) is compiled and linked to the shared libraries
of the llama-cpp-python installed in ``--python``: the very binaries the binding runs, and no
second compile of ggml (minutes of nvcc for CUDA). ``--print-path`` prefers the build from source
and falls back to the one linked to this interpreter's wheel.

Cache, under ``$MANGAKA_CACHE`` (default ``~/.cache/mangaka``):

    sdist/llama_cpp_python-<version>.tar.gz                   the downloaded sdist (kept for rebuilds)
    llama-bench/llama_cpp_python-<version>/<target>-<platform>-<digest>/llama-bench
    llama-bench/llama_cpp_python-<version>/<target>-<platform>-<digest>/build-info.json
    llama-bench/llama_cpp_python-<version>/wheel-<platform>-<digest>/...   --link-wheel builds

The digest hashes the version, target, platform and every CMake option (and, for --link-wheel,
the wheel's lib folder, which the binary's rpath points at). A folder appears whole or
not at all: the build runs in a temporary folder next to it and is renamed into place.

Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import IO

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path rather than run
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import native_common
from native_common import procs

log = logging.getLogger("mangaka.native")

BINARY = "llama-bench"
CACHE_FOLDER = (
    "llama-bench"  # native/llama_server.py builds llama-server with this module, into its own folder
)
# Fixed configure options: only llama-bench and what it links, static so that the cached binary
# stands alone (it still loads the CUDA runtime from the system for --target cuda), no OpenSSL.
# LLAMA_CURL no longer exists in this llama.cpp (it is only a deprecation check), so it is not passed.
BASE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_COMMON=ON",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_OPENSSL=OFF",
]
# Fields of the first test copied into the result, to say what was measured.
CONTEXT_FIELDS = (
    "n_threads",
    "n_gpu_layers",
    "backends",
    "cpu_info",
    "gpu_info",
    "model_type",
    "build_commit",
)
PYPI_JSON = "https://pypi.org/pypi/llama-cpp-python/{version}/json"


class BenchBuildError(RuntimeError):
    """A download, build or run failed; the message says what and what to do."""


def load_install() -> ModuleType:
    """native/install.py, imported from this script's folder (it is not a package)."""
    return native_common.load_sibling("install", "mangaka_native_install")


def configure_options(target_flags: list[str]) -> list[str]:
    """Every -D option of the configure step: the fixed ones, then the wheel's flags for the target."""
    return [*BASE_OPTIONS, *target_flags]


def cache_dir(root: Path, version: str, target: str, options: list[str], plat: str | None = None) -> Path:
    """The cache folder of one build; pure, so the key can be tested and printed without building."""
    plat = plat or sysconfig.get_platform()
    key = json.dumps({"v": version, "t": target, "o": sorted(options), "p": plat}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return root / CACHE_FOLDER / f"llama_cpp_python-{version}" / f"{target}-{plat}-{digest}"


# -- the source ---------------------------------------------------------------------------------


def _download_with_pip(python: str, version: str, dest_dir: Path) -> Path | None:
    # --no-binary for this one package only: the build backend (scikit-build-core) that pip
    # installs to read the sdist's metadata may still come as a wheel. pip has no way to skip that
    # metadata step; it takes ~10-25 s and needs no compiler.
    cmd = [
        python,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        "llama-cpp-python",
        f"llama-cpp-python=={version}",
        "-d",
        str(dest_dir),
    ]
    log.info("downloading the llama-cpp-python %s sdist with pip", version)
    returncode = _call(cmd, subprocess.DEVNULL)
    found = sorted(dest_dir.glob(f"llama_cpp_python-{version}.tar.gz"))
    if returncode != 0 or not found:
        log.warning("pip download failed (exit %s); trying PyPI's JSON API", returncode)
        return None
    return found[0]


def _download_from_pypi(version: str, dest_dir: Path) -> Path:
    """Last resort: the sdist URL from PyPI's JSON API, checked against its sha256."""
    try:
        with urllib.request.urlopen(PYPI_JSON.format(version=version), timeout=60) as resp:
            meta = json.load(resp)
        sdists = [u for u in meta["urls"] if u.get("packagetype") == "sdist"]
        if not sdists:
            raise BenchBuildError(f"PyPI lists no sdist for llama-cpp-python {version}")
        url, sha256 = sdists[0]["url"], sdists[0]["digests"]["sha256"]
        out = dest_dir / f"llama_cpp_python-{version}.tar.gz"
        digest = hashlib.sha256()
        with urllib.request.urlopen(url, timeout=60) as resp, out.open("wb") as fh:
            while chunk := resp.read(1 << 20):
                digest.update(chunk)
                fh.write(chunk)
    except OSError as exc:
        raise BenchBuildError(
            f"cannot download the llama-cpp-python {version} sdist ({exc}); pass --sdist with a "
            "local copy (the .tar.gz or its unpacked folder)"
        ) from exc
    if digest.hexdigest() != sha256:
        raise BenchBuildError(f"sha256 mismatch for {url}")
    return out


def fetch_sdist(python: str, version: str, cache_root: Path) -> Path:
    """The sdist tarball, from the cache or downloaded into it (atomically)."""
    dest = cache_root / "sdist" / f"llama_cpp_python-{version}.tar.gz"
    if dest.is_file():
        log.info("using cached sdist %s", dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mangaka-sdist-", dir=dest.parent) as tmp:
        got = _download_with_pip(python, version, Path(tmp)) or _download_from_pypi(version, Path(tmp))
        os.replace(got, dest)
    return dest


def sdist_version(root: Path) -> str | None:
    """The Version: line of an unpacked sdist's PKG-INFO, if there is one."""
    pkg_info = root / "PKG-INFO"
    if not pkg_info.is_file():
        return None
    for line in pkg_info.read_text(errors="replace").splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def unpack_llama_cpp(tarball: Path, into: Path) -> Path:
    """Extract only vendor/llama.cpp (and PKG-INFO) of the sdist; return the llama.cpp folder."""
    with tarfile.open(tarball) as tar:
        everything = tar.getmembers()
        source = [m for m in everything if "/vendor/llama.cpp/" in f"{m.name}/"]
        if not source:
            raise BenchBuildError(f"{tarball} has no vendor/llama.cpp")
        pkg_info = [m for m in everything if m.name.split("/")[1:] == ["PKG-INFO"]]
        kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(into, members=source + pkg_info, **kwargs)
    found = sorted(into.glob("*/vendor/llama.cpp"))
    if len(found) != 1:
        raise BenchBuildError(f"unexpected layout in {tarball}: {found}")
    return found[0]


# -- the build ----------------------------------------------------------------------------------


def _call(cmd: list[str], stdout: int | IO[str] | None, cwd: Path | None = None) -> int:
    """Run ``cmd`` in its own process group; if we are interrupted or terminated, stop all of it
    (cmake, ninja and every compiler), not just the first child."""
    return procs.run(cmd, stdout=stdout, cwd=cwd).returncode


def _run(cmd: list[str], what: str) -> None:
    log.info("%s: %s", what, " ".join(cmd))
    returncode = _call(cmd, sys.stderr)  # stdout is kept for the result line
    if returncode != 0:
        raise BenchBuildError(
            f"{what} failed (exit {returncode}). It needs cmake >= 3.21, a C++17 compiler "
            "(ninja recommended) and, for --target cuda, the CUDA toolkit; the output is above."
        )


def _stage(tmp: Path, built: Path, dest: Path, info: dict) -> Path:
    """Copy the binary and its build-info.json into ``dest``, which appears whole or not at all."""
    staged = tmp / "staged"
    staged.mkdir()
    shutil.copy2(built, staged / BINARY)
    (staged / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(staged, dest)
    log.info("built %s in %.0f s (%d jobs): %s", BINARY, info["build_seconds"], info["jobs"], dest)
    return dest / BINARY


def build(source: Path, options: list[str], dest: Path, jobs: int, meta: dict) -> Path:
    """Configure and build llama-bench from ``source`` (a llama.cpp tree); move it into ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mangaka-llama-bench-", dir=dest.parent) as tmp:
        build_dir = Path(tmp) / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        started = time.monotonic()
        _run(["cmake", "-S", str(source), "-B", str(build_dir), *generator, *options], "configure")
        _run(["cmake", "--build", str(build_dir), "--target", BINARY, "-j", str(jobs)], "build")
        built = [p for p in build_dir.rglob(BINARY) if p.is_file() and os.access(p, os.X_OK)]
        if not built:
            raise BenchBuildError(f"the build produced no {BINARY} under {build_dir}")
        info = {
            **meta,
            "options": options,
            "build_seconds": round(time.monotonic() - started, 1),
            "jobs": jobs,
        }
        return _stage(Path(tmp), built[0], dest, info)


# -- linked against the installed wheel ---------------------------------------------------------

# The static libraries of llama.cpp itself in llama-bench's link line, replaced by the wheel's
# shared ones: src/libllama.a, ggml/src/libggml.a, ggml/src/libggml-cpu.a, ggml/src/libggml-base.a.
WHEEL_REPLACED = re.compile(r"^(?:.*/)?(src/libllama|ggml/src/libggml(?:-[a-z0-9]+)?)\.a$")


def wheel_libdir(python: str) -> tuple[Path, str]:
    """The ``llama_cpp/lib`` folder and version of the llama-cpp-python installed in ``python``."""
    try:
        found = native_common.installed_wheel(python)
    except native_common.WheelQueryError as exc:
        raise BenchBuildError(f"cannot ask {python} for llama-cpp-python: {str(exc)[-500:]}") from None
    libdir = Path(found["lib"])
    if not found["lib"] or not (libdir / "libllama.so").exists():
        raise BenchBuildError(f"{python} has no llama-cpp-python with llama_cpp/lib/libllama.so")
    return libdir, found["version"]


def wheel_link_args(link_command: str, libdir: Path) -> tuple[list[str], list[str]]:
    """Turn ninja's link command for llama-bench into one that links the wheel's shared libraries.

    Returns the new command and the inputs that still have to be built (objects and the static
    libraries of common, cpp-httplib and llama-bench-impl). Pure, so it is tested on its own.
    """
    text = link_command.strip()
    if text.startswith(": &&"):
        text = text[len(": &&") :]
    if text.endswith("&& :"):
        text = text[: -len("&& :")]
    args, inputs, replaced = [], [], []
    for token in shlex.split(text):
        match = WHEEL_REPLACED.match(token)
        if match:
            name = match.group(1).rsplit("/", 1)[-1]
            replaced.append(name)
            args.append(str(libdir / f"{name}.so"))
            continue
        if token.endswith((".o", ".a")) and not token.startswith("/"):
            inputs.append(token)
        args.append(token)
    if "libllama" not in replaced:
        raise BenchBuildError(f"unexpected link command for {BINARY}: {link_command[:300]!r}")
    return [*args, f"-Wl,-rpath,{libdir}"], inputs


def build_against_wheel(
    source: Path, options: list[str], libdir: Path, dest: Path, jobs: int, meta: dict
) -> Path:
    """Build only llama-bench's own code (common, llama-bench) and link it to the wheel's libllama and
    libggml: the very binaries the Python binding runs, and no second ggml (or CUDA) compile."""
    ninja = shutil.which("ninja")
    if not ninja:
        raise BenchBuildError("--link-wheel needs ninja (pip install ninja)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mangaka-llama-bench-", dir=dest.parent) as tmp:
        build_dir = Path(tmp) / "build"
        started = time.monotonic()
        _run(["cmake", "-S", str(source), "-B", str(build_dir), "-G", "Ninja", *options], "configure")
        commands = procs.run(
            [ninja, "-C", str(build_dir), "-t", "commands", BINARY],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        link, inputs = wheel_link_args(commands.splitlines()[-1], libdir)
        for name in (f for f in link if f.startswith(str(libdir))):
            if not Path(name).exists():
                raise BenchBuildError(f"the installed wheel has no {name}")
        _run([ninja, "-C", str(build_dir), "-j", str(jobs), *inputs], "build")
        log.info("link: %s", " ".join(link))
        if _call(link, sys.stderr, cwd=build_dir) != 0:
            raise BenchBuildError("linking llama-bench against the wheel's libraries failed; see above")
        built = build_dir / "bin" / BINARY
        check = procs.run([str(built), "--list-devices"], capture_output=True, text=True, timeout=120)
        if check.returncode != 0:
            raise BenchBuildError(f"the linked {BINARY} does not start: {check.stderr.strip()[-500:]}")
        log.info("%s sees: %s", BINARY, " | ".join(check.stdout.split("\n")))
        info = {
            **meta,
            "options": options,
            "linked_to": str(libdir),
            "build_seconds": round(time.monotonic() - started, 1),
            "jobs": jobs,
        }
        return _stage(Path(tmp), built, dest, info)


# -- the cache ----------------------------------------------------------------------------------


def wheel_options() -> list[str]:
    # Nothing of ggml is compiled in this mode, so no target flags (and no nvcc) are needed; the
    # object-level dependencies let ninja build common and llama-bench without libllama and ggml.
    return [*BASE_OPTIONS, "-DGGML_NATIVE=OFF", "-DCMAKE_OPTIMIZE_DEPENDENCIES=ON"]


def cached_path(
    cache_root: Path, version: str, target: str, cuda_arch: str | None, link_wheel: Path | None
) -> Path:
    """Where the binary is (or would be) cached: per target, or per wheel ``lib`` folder."""
    if link_wheel is not None:
        return cache_dir(cache_root, version, "wheel", [*wheel_options(), f"lib={link_wheel}"]) / BINARY
    install = load_install()
    return (
        cache_dir(cache_root, version, target, configure_options(install.cmake_flags(target, cuda_arch)))
        / BINARY
    )


def _source(version: str, sdist: Path | None, cache_root: Path, python: str, tmp: Path) -> Path:
    """The llama.cpp tree to build: an unpacked sdist as given, or unpacked from the tarball."""
    if sdist is not None and sdist.is_dir():
        found = sdist_version(sdist)
        if found and found != version:
            raise BenchBuildError(f"{sdist} is llama-cpp-python {found}, not {version}")
        source = sdist / "vendor" / "llama.cpp"
        if not (source / "CMakeLists.txt").is_file():
            raise BenchBuildError(f"{sdist} has no vendor/llama.cpp/CMakeLists.txt")
        return source
    tarball = sdist or fetch_sdist(python, version, cache_root)
    started = time.monotonic()
    source = unpack_llama_cpp(tarball, tmp)
    log.info("unpacked vendor/llama.cpp in %.0f s", time.monotonic() - started)
    found = sdist_version(source.parent.parent)
    if found and found != version:
        raise BenchBuildError(f"{tarball} is llama-cpp-python {found}, not {version}")
    return source


def ensure_llama_bench(
    target: str,
    version: str,
    cuda_arch: str | None,
    cache_root: Path,
    sdist: Path | None = None,
    rebuild: bool = False,
    jobs: int | None = None,
    python: str = sys.executable,
    link_wheel: bool = False,
) -> Path:
    """The cached llama-bench, built first if it is missing: from source with the wheel's flags for
    ``target``, or (``link_wheel``) linked to the libraries of the wheel installed in ``python``."""
    libdir = None
    if link_wheel:
        libdir, installed = wheel_libdir(python)
        if installed != version:
            raise BenchBuildError(f"{python} has llama-cpp-python {installed}, not {version}")
    binary = cached_path(cache_root, version, target, cuda_arch, libdir)
    if binary.is_file() and not rebuild:
        log.info("using cached %s", binary)
        return binary
    jobs = jobs or int(os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or os.cpu_count() or 1)
    meta = {"llama_cpp_python": version, "target": "wheel" if libdir else target}
    binary.parent.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mangaka-src-", dir=binary.parent.parent) as tmp:
        source = _source(version, sdist, cache_root, python, Path(tmp))
        if libdir is not None:
            return build_against_wheel(source, wheel_options(), libdir, binary.parent, jobs, meta)
        install = load_install()
        options = configure_options(install.cmake_flags(target, cuda_arch))
        return build(source, options, binary.parent, jobs, meta)


def find_cached(
    cache_root: Path, version: str, target: str, cuda_arch: str | None, python: str
) -> Path | None:
    """For --print-path: the build from source for the target, else the one linked to ``python``'s wheel."""
    binary = cached_path(cache_root, version, target, cuda_arch, None)
    if binary.is_file():
        return binary
    try:
        libdir, _ = wheel_libdir(python)
    except BenchBuildError:
        return None
    binary = cached_path(cache_root, version, target, cuda_arch, libdir)
    return binary if binary.is_file() else None


# -- running it ---------------------------------------------------------------------------------


def llama_bench_command(
    binary: Path | str,
    model: Path | str,
    threads: int,
    n_gen: int,
    n_prompt: int,
    gpu_layers: int | None = None,
    repetitions: int | None = None,
    n_depth: int | None = None,
) -> list[str]:
    """The llama-bench command line; ``-p 0`` / ``-n 0`` skip that test."""
    cmd = [str(binary), "-m", str(model), "-t", str(threads), "-p", str(n_prompt), "-n", str(n_gen)]
    if gpu_layers is not None:
        cmd += ["-ngl", str(gpu_layers)]
    if repetitions is not None:
        cmd += ["-r", str(repetitions)]
    if n_depth is not None:
        cmd += ["-d", str(n_depth)]
    return [*cmd, "-o", "json"]


def parse_llama_bench_json(text: str) -> dict:
    """tg/pp tokens per second from ``llama-bench -o json``'s stdout.

    llama-bench prints one object per test: a ``tg`` test has ``n_prompt == 0`` and ``n_gen > 0``,
    a ``pp`` test the reverse; ``avg_ts`` is its mean tokens/s over the repetitions,
    ``stddev_ts`` the spread, ``samples_ts`` the repetitions.
    """
    start = text.find("[")
    if start < 0:
        raise BenchBuildError(f"no JSON array in llama-bench's output: {text[:200]!r}")
    tests = json.loads(text[start:])
    result: dict = {"tests": tests}
    for test in tests:
        if test.get("n_gen", 0) > 0 and test.get("n_prompt", 0) == 0:
            kind, n = "tg", test["n_gen"]
        elif test.get("n_prompt", 0) > 0 and test.get("n_gen", 0) == 0:
            kind, n = "pp", test["n_prompt"]
        else:
            continue
        result[f"{kind}_tokens_per_s"] = float(test["avg_ts"])
        result[f"{kind}_stddev"] = float(test["stddev_ts"])
        result[f"{kind}_tokens"] = int(n)
    for key in CONTEXT_FIELDS:
        if tests and key in tests[0]:
            result[key] = tests[0][key]
    return result


def run_llama_bench(
    binary: Path | str,
    model: Path | str,
    threads: int,
    n_gen: int,
    n_prompt: int,
    gpu_layers: int | None = None,
    repetitions: int | None = None,
    n_depth: int | None = None,
    timeout: float | None = 600,
) -> dict:
    """Run llama-bench once; return ``tg_tokens_per_s``/``pp_tokens_per_s`` (and stddevs, raw tests)."""
    cmd = llama_bench_command(binary, model, threads, n_gen, n_prompt, gpu_layers, repetitions, n_depth)
    log.info("running %s", " ".join(cmd))
    proc = procs.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise BenchBuildError(f"llama-bench failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    return parse_llama_bench_json(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    install = load_install()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("auto", *install.TARGETS), default="auto")
    parser.add_argument("--version", default=install.PINNED_VERSION, help="llama-cpp-python version")
    parser.add_argument("--cuda-arch", help="CUDA architectures, e.g. 86 or '80;90' (default: the GPU's)")
    parser.add_argument("--cache", type=Path, default=native_common.cache_root())
    parser.add_argument("--sdist", type=Path, help="a local sdist (.tar.gz or unpacked folder) to build from")
    parser.add_argument("--jobs", type=int, help="parallel compile jobs (default: all cores)")
    parser.add_argument("--rebuild", action="store_true", help="ignore the cached binary")
    parser.add_argument("--print-path", action="store_true", help="print the cached binary; 1 if absent")
    parser.add_argument(
        "--link-wheel",
        action="store_true",
        help="link to the libllama/libggml of the wheel installed in --python instead of compiling ggml",
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter whose wheel --link-wheel uses")
    run = parser.add_argument_group("run it after building (prints one JSON line)")
    run.add_argument("--model", type=Path, help="GGUF model to benchmark")
    run.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    run.add_argument("--n-gen", type=int, default=128)
    run.add_argument("--n-prompt", type=int, default=0)
    run.add_argument("--gpu-layers", type=int)
    run.add_argument("--repetitions", type=int)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="native: %(message)s")
    target = install.detect_target() if args.target == "auto" else args.target
    if args.print_path:
        if args.link_wheel:
            try:
                libdir = wheel_libdir(args.python)[0]
            except BenchBuildError as exc:
                log.error("%s", exc)
                return 1
            binary = cached_path(args.cache, args.version, target, args.cuda_arch, libdir)
            found = binary if binary.is_file() else None
        else:
            found = find_cached(args.cache, args.version, target, args.cuda_arch, args.python)
        if found is None:
            log.error("llama-bench is not built yet (run native/llama_bench.py without --print-path)")
            return 1
        sys.stdout.write(f"{found}\n")
        return 0
    # A SIGTERM becomes SystemExit: the temporary folders are removed and the build is stopped.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        binary = ensure_llama_bench(
            target,
            args.version,
            args.cuda_arch,
            args.cache,
            args.sdist,
            args.rebuild,
            args.jobs,
            args.python,
            args.link_wheel,
        )
        if args.model is None:
            sys.stdout.write(f"{binary}\n")
            return 0
        result = run_llama_bench(
            binary, args.model, args.threads, args.n_gen, args.n_prompt, args.gpu_layers, args.repetitions
        )
    except (BenchBuildError, subprocess.TimeoutExpired) as exc:
        log.error("%s", exc)
        return 1
    result.pop("tests", None)
    sys.stdout.write(json.dumps({"binary": str(binary), **result}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
