"""Facts about the installed llama-cpp-python: version, build features, loadable architectures,
the devices ggml sees.

``llama_cpp`` is imported here lazily, with an install hint when it is missing.
"""

from __future__ import annotations

import ctypes
import functools
import re
from dataclasses import dataclass
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


def gpu_offload() -> bool:
    """True when this build can offload layers to a GPU (``llama_supports_gpu_offload``)."""
    return bool(import_llama_cpp().llama_supports_gpu_offload())


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


@dataclass(frozen=True)
class Device:
    """A ggml backend device: the CPU, a GPU (CUDA0…), an accelerator."""

    name: str
    description: str
    kind: str  # "cpu", "gpu", "igpu" (shares the host's memory) or "accel"
    free: int  # bytes
    total: int

    @property
    def is_gpu(self) -> bool:
        return self.kind in ("gpu", "igpu")


_DEVICE_KINDS = ("cpu", "gpu", "igpu", "accel")


def _ggml_library(name: str) -> ctypes.CDLL:
    folder = library_path().parent
    for candidate in (f"lib{name}.so", f"lib{name}.dylib", f"{name}.dll"):
        if (folder / candidate).is_file():
            return ctypes.CDLL(str(folder / candidate))
    raise BackendMissingError(f"{name} is not beside {library_path()}; {INSTALL_HINT}")


def devices() -> list[Device]:
    """The devices this build's ggml registered, with their memory (``ggml_backend_dev_*``, which
    llama-cpp-python does not bind). A CUDA build on a machine whose driver is missing lists no GPU."""
    import_llama_cpp()  # loads ggml with the library
    registry = _ggml_library("ggml")
    base = _ggml_library("ggml-base")
    registry.ggml_backend_dev_count.restype = ctypes.c_size_t
    registry.ggml_backend_dev_get.restype = ctypes.c_void_p
    registry.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    for fn in (base.ggml_backend_dev_name, base.ggml_backend_dev_description):
        fn.restype = ctypes.c_char_p
        fn.argtypes = [ctypes.c_void_p]
    base.ggml_backend_dev_type.restype = ctypes.c_int
    base.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    base.ggml_backend_dev_memory.restype = None
    base.ggml_backend_dev_memory.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_size_t),
    ]
    found = []
    for i in range(registry.ggml_backend_dev_count()):
        dev = registry.ggml_backend_dev_get(i)
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        base.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        kind = base.ggml_backend_dev_type(dev)
        found.append(
            Device(
                name=(base.ggml_backend_dev_name(dev) or b"?").decode(errors="replace"),
                description=(base.ggml_backend_dev_description(dev) or b"").decode(errors="replace"),
                kind=_DEVICE_KINDS[kind] if 0 <= kind < len(_DEVICE_KINDS) else f"type {kind}",
                free=free.value,
                total=total.value,
            )
        )
    return found
