"""native.knows_architecture against the installed llama.cpp: the names its loader accepts, including
those the linker stores only as the tail of a longer string ("qwen2" inside "rwkv6qwen2"), and
none of the fragments or made-up names it refuses.

The ground truth is llama.cpp's loader itself: a GGUF holding nothing but ``general.architecture``
is loaded vocab-only, and its log says "unknown model architecture" exactly when the name is not
one it knows (a known one fails later, at its first missing hyperparameter).
"""

from __future__ import annotations

import ctypes
import struct
import sys
from pathlib import Path

import gguf
import llama_cpp
import llama_cpp._logger
import pytest

from mangaka.errors import UnsupportedArchitectureError
from mangaka.llm import native

# The architectures this pack's users meet; names that are tails of other architectures' names in
# llama.cpp's table ("qwen2" of "rwkv6qwen2", "rwkv7" of "arwkv7", "bert" of "nomic-bert"); and
# "qwen" (Qwen 1), a prefix of many.
REAL = ("qwen2", "qwen2moe", "qwen3", "qwen3moe", "qwen35moe", "llama", "gemma3", "rwkv7", "bert", "qwen")
# Fragments of real names, made-up names, and the table's entries that are no model.
MADE_UP = (
    "wen2",
    "qwen9",
    "rwkv6qwen",
    "wkv7",
    "ert",
    "en2",
    "2",
    "notanarch",
    "unknown",
    "(unknown)",
    "clip",
    "",
    "qwen2 ",
    "qwen2\0",
    "QWEN2",
)
# The table does not come from llm_arch_name where the library does not export it (Windows).
EXPORTS_TABLE = sys.platform != "win32"


def _header_only_gguf(path: Path, arch: str) -> Path:
    """A GGUF v3 with one key, ``general.architecture``, and no tensors (any bytes as the name)."""
    key, value = b"general.architecture", arch.encode()
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    data += struct.pack("<Q", len(key)) + key
    data += struct.pack("<IQ", gguf.GGUFValueType.STRING, len(value)) + value
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def loader_knows(tmp_path_factory):
    """``loader_knows(name)``: whether llama.cpp's own loader resolves ``name`` to an architecture."""
    folder = tmp_path_factory.mktemp("arch")
    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def collect(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        lines.append(text.decode(errors="replace"))

    llama_cpp.llama_backend_init()
    llama_cpp.llama_log_set(collect, ctypes.c_void_p(0))
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True

    def knows(name: str) -> bool:
        lines.clear()
        path = _header_only_gguf(folder / f"{len(list(folder.iterdir()))}.gguf", name)
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        if model:
            llama_cpp.llama_model_free(model)
        return "unknown model architecture" not in "".join(lines)

    try:
        yield knows
    finally:
        llama_cpp.llama_log_set(llama_cpp._logger.llama_log_callback, ctypes.c_void_p(0))


def test_the_pack_s_architectures_are_known():
    unknown = [name for name in REAL if not native.knows_architecture(name)]
    assert unknown == [], f"llama-cpp-python {native.version()} refused {unknown}"
    native.check_architecture("qwen2", "model qwen2.gguf")  # the reported bug: raised here


@pytest.mark.skipif(not EXPORTS_TABLE, reason="the fallback may accept fragments of known names")
def test_fragments_and_made_up_names_are_not_known():
    known = [name for name in MADE_UP if native.knows_architecture(name)]
    assert known == []
    with pytest.raises(UnsupportedArchitectureError, match=r"'wen2'.*cannot load"):
        native.check_architecture("wen2", "model wen2.gguf")


@pytest.mark.skipif(not EXPORTS_TABLE, reason="llm_arch_name is not exported by this build")
def test_the_table_is_read_from_the_library():
    table = native.known_architectures()
    assert table is not None
    assert set(REAL) <= table
    assert not table & set(MADE_UP)
    # gguf-py describes its own llama.cpp; the installed one may be older or newer, but most names agree.
    gguf_names = set(gguf.MODEL_ARCH_NAMES.values())
    assert len(table & gguf_names) > 0.8 * len(gguf_names)


def test_every_answer_agrees_with_llama_cpp_s_loader(loader_knows):
    """Every name llama.cpp's table has, every name gguf-py knows (which this llama.cpp may or may
    not), and the made-up ones: knows_architecture says what the loader does."""
    names = set(native.known_architectures() or ()) | set(gguf.MODEL_ARCH_NAMES.values()) | set(REAL)
    names |= set(MADE_UP)
    # "clip" resolves to an architecture, the projector, which the loader refuses only later; and
    # the loader reads the key as a C string, so "qwen2\0" loads as qwen2 (the pack refuses it).
    names = {name for name in names if name != "clip" and "\0" not in name}
    if not EXPORTS_TABLE:
        names -= set(MADE_UP)
    loader = {name: loader_knows(name) for name in sorted(names)}
    disagree = {name: says for name, says in loader.items() if native.knows_architecture(name) != says}
    assert disagree == {}, "knows_architecture disagrees with the loader (loader's answer shown)"
    assert loader_knows("qwen2") and not loader_knows("wen2")  # the check checks


def test_the_table_is_read_once_per_library(monkeypatch):
    native.knows_architecture("qwen2")
    monkeypatch.setattr(native, "_ARCH_NAME_SYMBOL", "no_such_symbol")
    assert native.knows_architecture("qwen2")  # cached: no second walk over the enum


def test_without_the_symbol_the_bytes_decide_and_never_refuse_a_real_name(monkeypatch):
    native._table_architectures.cache_clear()
    monkeypatch.setattr(native, "_ARCH_NAME_SYMBOL", "no_such_symbol")
    try:
        assert native.known_architectures() is None
        assert all(native.knows_architecture(name) for name in REAL)
        assert not native.knows_architecture("notanarch")
        assert not native.knows_architecture("clip")
    finally:
        native._table_architectures.cache_clear()
