"""Read a GGUF file's metadata without loading the model (pure Python, no llama_cpp).

Used before loading: to name the architecture, the trained context length and the chat
template, and to refuse files llama.cpp would reject with only a generic message.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelFileError

GGUF_MAGIC = b"GGUF"

# value type id → (struct format, size); 8 = string, 9 = array
_SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class ArrayInfo:
    """An array value that was skipped (e.g. the vocabulary): its item type and length."""

    item_type: int
    length: int


@dataclass
class GGUFInfo:
    path: Path
    version: int
    tensor_count: int
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def file_type(self) -> str:
        return str(self.metadata.get("general.type", "model"))

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", self.path.stem))

    @property
    def context_length(self) -> int | None:
        value = self.metadata.get(f"{self.architecture}.context_length")
        return int(value) if value is not None else None

    @property
    def chat_template(self) -> str | None:
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) else None

    @property
    def vocab_size(self) -> int | None:
        tokens = self.metadata.get("tokenizer.ggml.tokens")
        return tokens.length if isinstance(tokens, ArrayInfo) else None


class _Reader:
    def __init__(self, buf: mmap.mmap, path: Path) -> None:
        self.buf = buf
        self.pos = 0
        self.path = path

    def _take(self, fmt: str, size: int) -> Any:
        if self.pos + size > len(self.buf):
            raise ModelFileError(
                f"{self.path}: the GGUF header is truncated; the file is incomplete "
                "(re-download or re-copy it)"
            )
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self._take("<Q", 8)
        if self.pos + n > len(self.buf):
            raise ModelFileError(f"{self.path}: the GGUF header is truncated; the file is incomplete")
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        n = self._take("<Q", 8)  # not `self.pos += self._take(…)`: that reads pos before _take moves it
        self.pos += n

    def value(self, vtype: int, keep_arrays: bool) -> Any:
        if vtype in _SCALARS:
            return self._take(*_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type = self._take("<I", 4)
            length = self._take("<Q", 8)
            if keep_arrays:
                return [self.value(item_type, keep_arrays) for _ in range(length)]
            if item_type in _SCALARS:
                self.pos += _SCALARS[item_type][1] * length
            elif item_type == _STRING:
                for _ in range(length):
                    self.skip_string()
            else:
                for _ in range(length):
                    self.value(item_type, False)
            return ArrayInfo(item_type, length)
        raise ModelFileError(
            f"{self.path}: unknown GGUF value type {vtype}; the file is corrupt "
            "or from a newer GGUF version than this reader knows"
        )


def read_gguf_info(path: str | Path, keep_arrays: frozenset[str] = frozenset()) -> GGUFInfo:
    """Read the header and key-value metadata of a GGUF file.

    Arrays are skipped (kept as ``ArrayInfo``) unless their key is in ``keep_arrays``.
    Raises ``ModelFileError`` naming the file when it is missing, empty or not GGUF.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {path} not found")
    size = path.stat().st_size
    if size < 24:
        raise ModelFileError(
            f"{path} is not a GGUF model ({size} bytes); "
            "Mangaka loads .gguf files made by llama.cpp's converters"
        )
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if buf[:4] != GGUF_MAGIC:
            raise ModelFileError(
                f"{path} is not a GGUF file (it starts with {bytes(buf[:4])!r}, not b'GGUF'); "
                "convert it with llama.cpp's convert_hf_to_gguf.py or download a .gguf build"
            )
        reader = _Reader(buf, path)
        reader.pos = 4
        version = reader._take("<I", 4)
        if version not in (2, 3):
            raise ModelFileError(f"{path}: GGUF version {version} is not supported (expected 2 or 3)")
        tensor_count = reader._take("<Q", 8)
        kv_count = reader._take("<Q", 8)
        meta: dict[str, Any] = {}
        for _ in range(kv_count):
            key = reader.string()
            vtype = reader._take("<I", 4)
            meta[key] = reader.value(vtype, key in keep_arrays)
    return GGUFInfo(path=path, version=version, tensor_count=tensor_count, metadata=meta)
