"""Facts about the installed llama-cpp-python: version, build features, loadable architectures.

``llama_cpp`` is imported here lazily, with an install hint when it is missing.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from types import ModuleType

from ..errors import BackendMissingError, UnsupportedArchitectureError

INSTALL_HINT = (
    "install it with the pack's build script: `python native/install.py` run with the Python "
    "that runs ComfyUI (or `bash native/setup.sh` for the standalone .venv); see the README"
)

# The first llama-cpp-python release that loads an architecture, for architectures users meet
# with this pack. Anything not listed: "a newer llama-cpp-python".
FIRST_VERSION: dict[str, str] = {
    "qwen35": "0.3.17",
    "qwen35moe": "0.3.17",
}


def import_llama_cpp() -> ModuleType:
    try:
        import llama_cpp
    except ImportError as exc:
        raise BackendMissingError(f"llama-cpp-python is not installed ({exc}); {INSTALL_HINT}") from None
    return llama_cpp


def version() -> str:
    return str(import_llama_cpp().__version__)


def system_info() -> str:
    return import_llama_cpp().llama_print_system_info().decode(errors="replace").strip()


def library_path() -> Path:
    lib = import_llama_cpp().llama_cpp._lib
    return Path(lib._name)


@functools.lru_cache(maxsize=4)
def _library_strings(path: Path) -> bytes:
    return path.read_bytes()


def knows_architecture(arch: str) -> bool:
    """True when the installed libllama names ``arch`` among its architectures.

    llama.cpp keeps its architecture names as NUL-terminated strings in the library's read-only
    data (``LLM_ARCH_NAMES``); a name that is not there cannot be loaded.
    """
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", arch):
        return False
    return b"\0" + arch.encode() + b"\0" in _library_strings(library_path())


def check_architecture(arch: str, what: str) -> None:
    """Raise ``UnsupportedArchitectureError`` when the installed llama.cpp cannot load ``arch``."""
    if not arch:
        raise UnsupportedArchitectureError(
            f"{what} has no general.architecture key; it is not a model GGUF llama.cpp can load"
        )
    if knows_architecture(arch):
        return
    needed = FIRST_VERSION.get(arch)
    need = (
        f"llama-cpp-python {needed} or newer"
        if needed
        else "a llama-cpp-python release newer than the installed one (if any supports it yet)"
    )
    raise UnsupportedArchitectureError(
        f"{what} has architecture {arch!r}, which the installed llama-cpp-python {version()} cannot "
        f"load; it needs {need}. Rebuild with `python native/install.py --version X.Y.Z`."
    )
