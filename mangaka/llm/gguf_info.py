"""Read a GGUF file's metadata without loading the model (pure Python, no llama_cpp).

Used before loading: to name the architecture, the trained context length and the chat
template, and to refuse files llama.cpp would reject with only a generic message. The tensor table
is read too, and each tensor's data checked against the file's size, so a file cut short (a
download stopped at 50 MB) or with a damaged count is refused as damaged, never "loadable". Every
count is checked against the bytes left before it is looped over, and arrays of arrays nest at
most ``MAX_DEPTH`` levels (``mangaka.jsontext``), so any bytes give an answer or a
``ModelFileError``, quickly.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelFileError
from ..jsontext import MAX_DEPTH

GGUF_MAGIC = b"GGUF"
DAMAGED = "this file is damaged or incomplete: download or copy it again"
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
# ggml type id → (elements per block, bytes per block), as gguf-py's GGML_QUANT_SIZES.
GGML_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
    15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
    21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
    28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66), 39: (32, 17),
    40: (64, 36), 41: (128, 18),
}  # fmt: skip

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
# The fewest bytes one value of a type takes (a string: its length; an array: type and length).
_MIN_SIZE = {**{t: size for t, (_, size) in _SCALARS.items()}, _STRING: 8, _ARRAY: 12}


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
    data_size: int = 0  # bytes of tensor data the tensor table describes (to its last tensor's end)
    parameters: int = 0  # the elements of every tensor: the model's size (a MoE's experts all counted)

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

    def damaged(self, what: str) -> ModelFileError:
        return ModelFileError(f"{self.path}: {what}; {DAMAGED}")

    def _take(self, fmt: str, size: int) -> Any:
        if self.pos + size > len(self.buf):
            raise self.damaged("the GGUF header is truncated")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def count(self, n: int, item_size: int, what: str) -> int:
        """``n`` items of at least ``item_size`` bytes each, refused unless they fit in the rest."""
        if n * item_size > len(self.buf) - self.pos:
            raise self.damaged(f"the header lists {n} {what}, more than the file holds")
        return n

    def string(self) -> str:
        n = self._take("<Q", 8)
        if self.pos + n > len(self.buf):
            raise self.damaged("the GGUF header is truncated")
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        n = self._take("<Q", 8)  # not `self.pos += self._take(…)`: that reads pos before _take moves it
        self.pos += n

    def value(self, vtype: int, keep_arrays: bool, depth: int = 0) -> Any:
        if vtype in _SCALARS:
            return self._take(*_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            if depth >= MAX_DEPTH:
                raise self.damaged(f"a metadata array is nested more than {MAX_DEPTH} levels deep")
            item_type = self._take("<I", 4)
            length = self._take("<Q", 8)
            if item_type not in _MIN_SIZE:
                raise self._unknown(item_type)
            self.count(length, _MIN_SIZE[item_type], "array items")
            if keep_arrays:
                return [self.value(item_type, keep_arrays, depth + 1) for _ in range(length)]
            if item_type in _SCALARS:
                self.pos += _SCALARS[item_type][1] * length
            elif item_type == _STRING:
                for _ in range(length):
                    self.skip_string()
            else:
                for _ in range(length):
                    self.value(item_type, False, depth + 1)
            return ArrayInfo(item_type, length)
        raise self._unknown(vtype)

    def _unknown(self, vtype: int) -> ModelFileError:
        return ModelFileError(
            f"{self.path}: unknown GGUF value type {vtype}; {DAMAGED}, or it is from a newer GGUF "
            "version than this reader knows"
        )

    def tensor_data_size(self, tensor_count: int, alignment: int) -> tuple[int, int]:
        """The bytes of tensor data the tensor table describes, and its tensors' elements; a tensor
        that ends past the end of the file, or a table that does not fit in it, is damage."""
        self.count(tensor_count, 24, "tensors")  # name length, dimensions, type, offset
        end = total = 0
        for _ in range(tensor_count):
            name = self.string()
            n_dims = self._take("<I", 4)
            if n_dims > MAX_DIMS:
                raise self.damaged(f"tensor {name!r} has {n_dims} dimensions (at most {MAX_DIMS})")
            elements = 1
            for _ in range(n_dims):
                elements *= self._take("<Q", 8)
            ggml_type = self._take("<I", 4)
            offset = self._take("<Q", 8)
            block, size = GGML_BLOCKS.get(ggml_type, (1, 0))  # a newer type: its offset is checked
            end = max(end, offset + -(-elements // block) * size)
            total += elements
        start = -(-self.pos // alignment) * alignment
        if end and start + end > len(self.buf):  # no tensors (a vocabulary-only file): no data, no padding
            raise self.damaged(
                f"its tensors need {start + end} bytes but the file has {len(self.buf)} "
                f"({(start + end - len(self.buf)) / 2**20:.1f} MiB missing)"
            )
        return end, total


def read_gguf_info(path: str | Path, keep_arrays: frozenset[str] = frozenset()) -> GGUFInfo:
    """Read the header and key-value metadata of a GGUF file.

    Arrays are skipped (kept as ``ArrayInfo``) unless their key is in ``keep_arrays``.
    Raises ``ModelFileError`` naming the file when it is missing, empty or not GGUF.
    """
    path = Path(path)
    if path.is_dir():
        raise ModelFileError(f"model file {path} is a folder; give the .gguf file inside it")
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
        kv_count = reader.count(reader._take("<Q", 8), 13, "metadata entries")
        meta: dict[str, Any] = {}
        for _ in range(kv_count):
            key = reader.string()
            vtype = reader._take("<I", 4)
            meta[key] = reader.value(vtype, key in keep_arrays)
        alignment = meta.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or isinstance(alignment, bool) or not 0 < alignment <= 2**20:
            raise reader.damaged(f"general.alignment is {alignment!r}")
        data_size, parameters = reader.tensor_data_size(tensor_count, alignment)
    return GGUFInfo(path, version, tensor_count, meta, data_size, parameters)
