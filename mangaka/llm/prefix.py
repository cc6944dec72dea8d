"""Prompt-prefix reuse for the in-process backend.

llama-cpp-python keeps the longest common token prefix between calls by truncating the KV cache.
That works for attention-only models (qwen3moe, gemma3) but not for hybrid or recurrent ones
(qwen35moe's Gated DeltaNet layers): a recurrent state cannot be truncated, so the library
re-decodes the whole prompt every call. For those we snapshot the sequence state at message
boundaries (after the system prompt, after the chapter) and restore the longest matching snapshot
before the next call, so a batch pays for its shared system prompt once and a chapter's second
call pays only for its own task.

Snapshots use llama.cpp's per-sequence state (``llama_state_seq_get_data``), not
``Llama.save_state``, which also copies the logits buffer (n_batch × vocabulary floats: about
0.5 GB at Qwen3.5's vocabulary). Their total size is bounded (``MANGAKA_PREFIX_CACHE_MB``,
default 1024); the least recently used snapshot goes first.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..errors import MangakaError

log = logging.getLogger(__name__)

DEFAULT_CACHE_MB = 1024


def cache_limit_bytes() -> int:
    raw = os.environ.get("MANGAKA_PREFIX_CACHE_MB", str(DEFAULT_CACHE_MB))
    try:
        return max(0, int(raw)) * 2**20
    except ValueError:
        raise MangakaError(f"MANGAKA_PREFIX_CACHE_MB must be a whole number of MiB, got {raw!r}") from None


@dataclass
class Snapshot:
    tokens: tuple[int, ...]
    data: bytes


class PrefixCache:
    """Sequence-state snapshots keyed by the token prefix they hold, bounded in bytes (LRU)."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = cache_limit_bytes() if max_bytes is None else max_bytes
        self._snaps: OrderedDict[tuple[int, ...], Snapshot] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._snaps)

    def __contains__(self, tokens: tuple[int, ...]) -> bool:
        return tokens in self._snaps

    def longest(self, tokens: list[int], limit: int) -> Snapshot | None:
        """The snapshot of the longest prefix of ``tokens`` that is at most ``limit`` long."""
        best: Snapshot | None = None
        for key, snap in self._snaps.items():
            n = len(key)
            if n <= limit and (best is None or n > len(best.tokens)) and tuple(tokens[:n]) == key:
                best = snap
        if best is not None:
            self._snaps.move_to_end(best.tokens)
        return best

    def add(self, tokens: tuple[int, ...], data: bytes) -> bool:
        """Keep a snapshot; False when it alone is larger than the whole budget."""
        if len(data) > self.max_bytes:
            log.info(
                "prefix snapshot of %d tokens (%.0f MiB) exceeds MANGAKA_PREFIX_CACHE_MB; not kept",
                len(tokens),
                len(data) / 2**20,
            )
            return False
        if tokens in self._snaps:
            self.bytes -= len(self._snaps.pop(tokens).data)
        while self._snaps and self.bytes + len(data) > self.max_bytes:
            _key, old = self._snaps.popitem(last=False)
            self.bytes -= len(old.data)
        self._snaps[tokens] = Snapshot(tokens, data)
        self.bytes += len(data)
        return True

    def clear(self) -> None:
        self._snaps.clear()
        self.bytes = 0


def is_recurrent(llama: Any) -> bool:
    """True for models whose memory cannot be truncated (recurrent or hybrid layers)."""
    return bool(getattr(llama, "_is_recurrent", False) or getattr(llama, "_is_hybrid", False))


def save_sequence(llama: Any) -> bytes:
    import llama_cpp

    ctx = llama._ctx.ctx
    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    buf = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0)
    return bytes(buf[:written])


def restore_sequence(llama: Any, snap: Snapshot) -> None:
    """Load ``snap`` into sequence 0 and make the Llama object agree with it."""
    import llama_cpp

    llama.reset()  # clears the memory; the snapshot then fills sequence 0
    buf = (ctypes.c_uint8 * len(snap.data)).from_buffer_copy(snap.data)
    if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buf, len(snap.data), 0) == 0:
        raise MangakaError("llama.cpp could not restore a prompt snapshot")
    n = len(snap.tokens)
    llama.input_ids[:n] = snap.tokens
    llama.n_tokens = n


def prepare(llama: Any, cache: PrefixCache, tokens: list[int], boundaries: list[int]) -> tuple[int, int]:
    """Bring the context to a state holding ``tokens[:start]``; return ``(start, reused)``, where
    ``reused`` counts the prompt tokens that were not decoded again.

    At least the last prompt token is always left to evaluate (its logits start the reply).
    Attention-only models keep the longest common prefix with what the context holds; hybrid
    and recurrent ones restore the longest snapshot, then evaluate up to each message boundary
    not yet snapshotted and keep a snapshot there.
    """
    limit = len(tokens) - 1
    held = 0
    for a, b in zip(llama.input_ids[: llama.n_tokens], tokens[:limit], strict=False):
        if a != b:
            break
        held += 1
    if not is_recurrent(llama):
        if held > 0 and llama._ctx.kv_cache_seq_rm(-1, held, -1):
            llama.n_tokens = held
            return held, held
        llama.reset()
        return 0, 0
    if held > 0 and held == llama.n_tokens:
        start = held  # the context holds exactly a prefix of this prompt: continue from it
    else:
        snap = cache.longest(tokens, limit)
        if snap is not None:
            restore_sequence(llama, snap)
            start = len(snap.tokens)
        else:
            llama.reset()
            start = 0
    reused = start
    for b in sorted(set(boundaries)):
        if start < b <= limit and tuple(tokens[:b]) not in cache:
            llama.eval(tokens[start:b])
            start = b
            cache.add(tuple(tokens[:b]), save_sequence(llama))
    return start, reused
