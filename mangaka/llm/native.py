"""Facts about the installed llama-cpp-python: version, build features, loadable architectures,
the devices ggml sees.

``llama_cpp`` is imported here lazily, with an install hint when it is missing.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import BackendMissingError, UnsupportedArchitectureError

log = logging.getLogger(__name__)

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


# llama.cpp's table of architecture names (``LLM_ARCH_NAMES``) is reachable through
# ``const char * llm_arch_name(llm_arch)``, a C++ function of libllama that is not in its C API but
# is exported wherever the library is built with default symbol visibility (Linux, macOS, MinGW): this is
# its Itanium-ABI name. ``llm_arch`` is a plain enum that counts from 0 up to ``LLM_ARCH_UNKNOWN``.
_ARCH_NAME_SYMBOL = "_Z13llm_arch_name8llm_arch"
_ARCH_NAME_MISSING = "unknown"  # what llm_arch_name answers for a number that is no architecture
# Far above the ~155 architectures llama.cpp has; llm_arch_name looks a value up in a map, so one
# past the end only answers "unknown".
_ARCH_ENUM_BOUND = 2048
# Names in the table that a GGUF cannot be loaded as a model under: LLM_ARCH_UNKNOWN's name, and
# "clip", the multimodal projector (llama.cpp refuses it as a main model; it goes with --mmproj).
_NOT_LOADABLE = frozenset({"(unknown)", "clip"})
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


@functools.lru_cache(maxsize=4)
def _library_bytes(path: Path) -> bytes:
    return path.read_bytes()


@functools.lru_cache(maxsize=4)
def _table_architectures(path: Path) -> frozenset[str] | None:
    """The names in the library's own architecture table, through ``llm_arch_name``; ``None`` when
    the library does not export it (an MSVC-built DLL exports only the C API) or answers nonsense."""
    lib = import_llama_cpp().llama_cpp._lib
    try:
        arch_name = getattr(lib, _ARCH_NAME_SYMBOL)
    except AttributeError:
        log.debug("%s does not export llm_arch_name", path)
        return None
    arch_name.restype = ctypes.c_char_p
    arch_name.argtypes = [ctypes.c_int]
    names = set()
    for value in range(_ARCH_ENUM_BOUND):
        raw = arch_name(value)
        name = raw.decode(errors="replace") if raw else _ARCH_NAME_MISSING
        if name != _ARCH_NAME_MISSING:
            names.add(name)
    # LLM_ARCH_LLAMA has been in the table since the first GGUF; without it the symbol is not
    # the function this code expects.
    if "llama" not in names or not all(_NAME.fullmatch(n) for n in names - _NOT_LOADABLE):
        log.warning("llm_arch_name in %s answered unexpected names; reading the library's bytes", path)
        return None
    return frozenset(names - _NOT_LOADABLE)


def _in_library_bytes(arch: str, path: Path) -> bool:
    """Whether ``arch`` ends a NUL-terminated string in the library: a fallback that may say yes
    to a name llama.cpp does not know (any tail of a known name, "wen2" for "qwen2"), never no to
    one it knows. The linker merges string literals by their tails, so "qwen2" is stored only as
    the end of "rwkv6qwen2" and a search for NUL + name + NUL misses it."""
    return arch.encode() + b"\0" in _library_bytes(path)


def known_architectures() -> frozenset[str] | None:
    """Every architecture name the installed llama.cpp loads a model under, from its own table;
    ``None`` when the library does not let the table be read (see ``knows_architecture``)."""
    return _table_architectures(library_path())


def knows_architecture(arch: str) -> bool:
    """True when the installed llama.cpp can load a GGUF whose ``general.architecture`` is ``arch``.

    llama.cpp resolves that key by comparing it with each name in its table of architectures
    (``LLM_ARCH_NAMES``); an unknown name fails the load with "unknown model architecture". The
    table has no C API, but libllama exports ``llm_arch_name(llm_arch)``, which returns the table's
    name for an enum value, so the table is read by calling it for every value: the very names the
    loader compares with, in about a millisecond, once per library (cached). The library's bytes
    cannot give that answer: the linker stores a string literal that is the tail of another one
    inside it ("qwen2" is the end of "rwkv6qwen2"), so an exact NUL-delimited search refuses real
    architectures, and a tail search accepts fragments of them ("wen2"). Where the function is not
    exported (MSVC-built Windows DLLs), the tail search is the fallback, because refusing a model the
    library loads is worse than letting llama.cpp refuse one itself. "clip" is in the table but is
    a projector, not a model, and is refused.
    """
    if not _NAME.fullmatch(arch) or arch in _NOT_LOADABLE:
        return False
    path = library_path()
    table = _table_architectures(path)
    if table is not None:
        return arch in table
    return _in_library_bytes(arch, path)


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
