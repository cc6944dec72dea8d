"""What the native/ scripts share: the cache root, loading a sibling script, the installed wheel.

A plain module (native/ is not a package), standard library only. ``python native/x.py`` has
native/ as ``sys.path[0]``; a script loaded by path (tests, the benchmark) puts its own folder
there first, so every script imports this one as ``import native_common``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent

# The llama-cpp-python installed in an interpreter, asked without importing it unless argv[1] is
# "import" (then an import that fails is an error): its version, pip's direct_url.json and the
# llama_cpp/lib folder ("" for both when the package is absent).
_WHEEL_QUERY = (
    "import importlib.metadata as m, importlib.util as u, json, os, sys\n"
    "if sys.argv[1:] == ['import']:\n"
    "    import llama_cpp\n"
    "spec = u.find_spec('llama_cpp')\n"
    "folder = list(spec.submodule_search_locations)[0] if spec else ''\n"
    "d = m.distribution('llama-cpp-python') if folder else None\n"
    "url = d.read_text('direct_url.json') if d else None\n"
    "print(json.dumps({'version': d.version if d else '', 'direct_url': json.loads(url) if url else None,"
    " 'lib': os.path.join(folder, 'lib') if folder else ''}))\n"
)


class WheelQueryError(RuntimeError):
    """The interpreter could not answer; the message is its stderr."""


def cache_root() -> Path:
    """``$MANGAKA_CACHE``, or ``~/.cache/mangaka``: wheels, built binaries, emulation tools."""
    return Path(os.environ.get("MANGAKA_CACHE", Path.home() / ".cache" / "mangaka"))


def load_sibling(name: str, module_name: str) -> ModuleType:
    """native/<name>.py as a module of its own named ``module_name`` (a fresh instance each call)."""
    return load_path(HERE / f"{name}.py", module_name)


def load_path(path: Path, module_name: str) -> ModuleType:
    """The Python file ``path`` as a module named ``module_name``."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Children in their own process group, ended whole on a timeout, an interrupt or a failure: the
# pack's mangaka/procs.py (standard library only), by path.
procs = load_path(HERE.parent / "mangaka" / "procs.py", "mangaka_procs")


def installed_wheel(python: str, *, must_import: bool = False) -> dict:
    """``{"version", "direct_url", "lib"}`` of the llama-cpp-python installed in ``python``."""
    args = [python, "-c", _WHEEL_QUERY, *(["import"] if must_import else [])]
    done = procs.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise WheelQueryError(done.stderr.strip())
    return json.loads(done.stdout.strip().splitlines()[-1])
