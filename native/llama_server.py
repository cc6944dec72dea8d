"""Build llama.cpp's own ``llama-server`` from the llama.cpp source vendored in the
llama-cpp-python sdist, linked to the libraries of the installed wheel (no second ggml build),
and cache it like the wheel. The remote-LLM tests and ``python -m mangaka bench`` serve the tiny
model with it on 127.0.0.1.

    python native/llama_server.py                # build once (minutes), print the binary's path
    python native/llama_server.py --print-path   # the cached binary, or exit 1

The cache is ``~/.cache/mangaka/llama-server/llama_cpp_python-<version>/wheel-<platform>-<digest>/``,
keyed by the version, the options and the *content* of the wheel's shared libraries (not the
path of the venv they sit in), so a fresh checkout with the same cached wheel reuses the binary.
Run it with ``server_env()``: ``LD_LIBRARY_PATH`` pointing at the current wheel's ``lib`` folder.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import re
import sys
from pathlib import Path
from types import ModuleType

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path rather than run
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import native_common

HERE = Path(__file__).resolve().parent


def load_impl() -> ModuleType:
    """native/llama_bench.py as a separate module instance, switched to llama-server."""
    impl = native_common.load_sibling("llama_bench", "mangaka_native_llama_server_impl")
    impl.BINARY = "llama-server"
    impl.CACHE_FOLDER = "llama-server"
    impl.BASE_OPTIONS = [o for o in impl.BASE_OPTIONS if not o.startswith("-DLLAMA_BUILD_SERVER=")]
    impl.BASE_OPTIONS.append("-DLLAMA_BUILD_SERVER=ON")
    # Only the server's own code is compiled here (its HTTP, JSON and chat-template handling); the
    # model runs in the wheel's libraries, built -O3. At -O1 that compile took 143 s of a quiet
    # 2-core machine against 200 s at -O3, and it is on CI's cold setup path (it waits for the wheel).
    impl.BASE_OPTIONS += [f"-DCMAKE_{lang}_FLAGS_RELEASE=-O1 -DNDEBUG" for lang in ("C", "CXX")]
    # llama-server also links libmtmd (multimodal), which the wheel ships as a shared library.
    impl.WHEEL_REPLACED = re.compile(
        r"^(?:.*/)?(src/libllama|ggml/src/libggml(?:-[a-z0-9]+)?|tools/mtmd/libmtmd)\.a$"
    )
    by_path = impl.cached_path

    def cached_path(cache_root, version, target, cuda_arch, link_wheel):
        if link_wheel is None:
            return by_path(cache_root, version, target, cuda_arch, link_wheel)
        options = [*impl.wheel_options(), f"libs={wheel_digest(Path(link_wheel))}"]
        return impl.cache_dir(cache_root, version, "wheel", options) / impl.BINARY

    impl.cached_path = cached_path
    return impl


def wheel_digest(libdir: Path) -> str:
    """What the wheel's shared libraries contain (the binary links against exactly these)."""
    digest = hashlib.sha256()
    for lib in sorted(p for p in libdir.iterdir() if ".so" in p.name and p.is_file() and not p.is_symlink()):
        digest.update(lib.name.encode())
        digest.update(lib.read_bytes())
    return digest.hexdigest()[:16]


def server_env(python: str = sys.executable) -> dict[str, str]:
    """The environment to run the cached llama-server in: the current wheel's libraries first."""
    libdir, _version = load_impl().wheel_libdir(python)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(libdir), env.get("LD_LIBRARY_PATH", "")) if p)
    return env


def ensure(python: str = sys.executable, rebuild: bool = False, jobs: int | None = None) -> Path:
    impl = load_impl()
    install = impl.load_install()
    return impl.ensure_llama_bench(
        "cpu", install.PINNED_VERSION, None, native_common.cache_root(), rebuild=rebuild, jobs=jobs,
        python=python, link_wheel=True,
    )  # fmt: skip


def cached(python: str = sys.executable) -> Path | None:
    impl = load_impl()
    install = impl.load_install()
    libdir, installed = impl.wheel_libdir(python)
    path = impl.cached_path(native_common.cache_root(), install.PINNED_VERSION, "cpu", None, libdir)
    return path if path.is_file() and installed == install.PINNED_VERSION else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print-path", action="store_true", help="print the cached binary; exit 1 if absent")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--python", default=sys.executable, help="interpreter whose wheel to link to")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.print_path:
        found = cached(args.python)
        if found is None:
            return 1
        sys.stdout.write(f"{found}\n")
        return 0
    sys.stdout.write(f"{ensure(args.python, args.rebuild, args.jobs)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
