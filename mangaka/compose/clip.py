"""How many CLIP tokens a prompt takes.

Stable Diffusion's text encoders (CLIP ViT-L/14 and OpenCLIP bigG share one tokenizer) read 77
tokens at a time: a start token, 75 prompt tokens and an end token. ComfyUI encodes a longer
prompt as several 75-token chunks, each encoded on its own, so words past the first chunk still
count but no longer share attention with the start of the prompt.

Two counters:

- ``ClipTokenizer``: CLIP's own byte-pair encoding, read from a ``vocab.json`` + ``merges.txt``
  folder (inside ComfyUI: ``comfy/sd1_tokenizer``). Exact, except that ``\\p{L}``/``\\p{N}`` in
  CLIP's word pattern are approximated with Python's ``re`` classes.
- ``estimate_clip_tokens``: no files needed. Lower-cased words of up to 8 letters count 1,
  longer words one per 7 letters (rounded up), each digit 1, each run of punctuation 1, each
  Chinese character 3 and any other non-ASCII letter 2 (CLIP's vocabulary is English-heavy: most
  CJK characters are split into byte tokens). Within about 15% of the exact count on English
  prompts; a test measures it against the exact counter.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from functools import lru_cache
from pathlib import Path

CHUNK = 75  # prompt tokens per CLIP chunk (77 with the start and end tokens)

# CLIP's pattern is  <|startoftext|>|<|endoftext|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
_WORDS = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d|[^\W\d_]+|\d|(?:[^\s\w]|_)+", re.IGNORECASE)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _clean(text: str) -> str:
    return " ".join(text.split()).lower()


def estimate_clip_tokens(text: str) -> int:
    """A rough CLIP token count without the vocabulary (see the module's docstring)."""
    count = 0
    for word in _WORDS.findall(_clean(text)):
        if not word.isascii():
            han = len(_HAN.findall(word))
            other = sum(1 for ch in word if not ch.isascii()) - han
            count += 3 * han + 2 * other + (1 if any(ch.isascii() for ch in word) else 0)
        elif word[0].isalpha():
            count += 1 if len(word) <= 8 else math.ceil(len(word) / 7)
        else:
            count += 1
    return count


def chunks(n_tokens: int) -> int:
    """How many 75-token chunks ComfyUI encodes a prompt of ``n_tokens`` in."""
    return max(1, math.ceil(n_tokens / CHUNK))


@lru_cache(maxsize=1)
def _bytes_to_unicode() -> dict[int, str]:
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    codes = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in codes), strict=True))


class ClipTokenizer:
    """CLIP's byte-pair encoder, for counting; build it with ``from_folder``."""

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]]) -> None:
        self.vocab = vocab
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def from_folder(cls, folder: str | Path) -> ClipTokenizer:
        """Read ``vocab.json`` and ``merges.txt`` (the Hugging Face CLIP tokenizer files)."""
        folder = Path(folder)
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        lines = (folder / "merges.txt").read_text(encoding="utf-8").splitlines()
        merges = [tuple(line.split()) for line in lines[1:] if line and not line.startswith("#")]
        return cls(vocab, [m for m in merges if len(m) == 2])  # type: ignore[misc]

    def _bpe(self, word: str) -> list[str]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        parts = [*word[:-1], word[-1] + "</w>"]
        while len(parts) > 1:
            best = min(
                ((self.ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(itertools.pairwise(parts))),
            )
            if best[0] == math.inf:
                break
            i = best[1]
            a, b = parts[i], parts[i + 1]
            merged: list[str] = []
            j = 0
            while j < len(parts):
                if j < len(parts) - 1 and parts[j] == a and parts[j + 1] == b:
                    merged.append(a + b)
                    j += 2
                else:
                    merged.append(parts[j])
                    j += 1
            parts = merged
        self._cache[word] = parts
        return parts

    def tokens(self, text: str) -> list[str]:
        """The BPE pieces of ``text`` (no start or end token)."""
        table = _bytes_to_unicode()
        out: list[str] = []
        for word in _WORDS.findall(_clean(text)):
            out += self._bpe("".join(table[b] for b in word.encode("utf-8")))
        return out

    def count(self, text: str) -> int:
        return len(self.tokens(text))
