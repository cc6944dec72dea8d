"""What Qwen3.5-35B-A3B's real shape holds and reads (``bench --only real_shape``): the resident
memory its load and decoding add against what the pack asks the host for (``room_request``), and
the weights one decoded token reads against the machine's read bandwidth (the tokens/s that
bandwidth allows).

Right after the load the model file's pages are paged out (``page_out``): llama.cpp reads much of
the file only to copy it into its repacked CPU layout, and those stale pages would otherwise count
as resident; the ones it reads in place come back while it decodes.
"""

from __future__ import annotations

import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

MADV_PAGEOUT = 21  # linux/mman.h, Linux 5.4 and later
GIB = 2**30


def rss() -> dict[str, int]:
    """This process's resident bytes: ``VmRSS`` in all, ``RssAnon`` and ``RssFile``."""
    out = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) * 1024
    return out


def page_out(path: Path) -> int:
    """Ask the kernel to reclaim this process's pages of ``path``'s mappings now (``MADV_PAGEOUT``):
    the file pages llama.cpp read only to copy (the CPU's repacked weights) go, the ones it
    reads in place come back as it decodes. Returns the bytes advised (0 where the kernel refused
    or is not Linux: the resident figure then counts pages the kernel could reclaim)."""
    import ctypes
    import os

    if not sys.platform.startswith("linux"):  # no /proc/self/maps, no MADV_PAGEOUT
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    target = str(path.resolve())
    advised = 0
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        spans = [line.split(None, 5) for line in maps]
    for span in spans:
        if len(span) == 6 and span[5].strip() == target:
            start, end = (int(x, 16) for x in span[0].split("-"))
            if libc.madvise(start, end - start, MADV_PAGEOUT) != 0:
                log.warning("madvise(MADV_PAGEOUT) on %s failed: %s", target, os.strerror(ctypes.get_errno()))
                return 0
            advised += end - start
    return advised


def memory_figures(
    estimate: Any, before: dict[str, int], after: dict[str, int], paged_out: int
) -> dict[str, float]:
    """The pack's estimate (a ``RoomRequest``: the file, the KV cache, the recurrent state, the
    compute buffer) against the resident memory the process gained between ``before`` and
    ``after`` (``rss``), anonymous and file-backed; ``paged_out``: what ``page_out`` advised."""
    held = after["VmRSS"] - before["VmRSS"]
    return {
        "real_shape_memory_estimate_gib": estimate.total / GIB,
        "real_shape_memory_estimate_weights_gib": estimate.weights / GIB,
        "real_shape_memory_estimate_kv_gib": estimate.kv_cache / GIB,
        "real_shape_memory_estimate_recurrent_gib": estimate.recurrent / GIB,
        "real_shape_memory_estimate_compute_gib": estimate.compute / GIB,
        "real_shape_memory_measured_gib": held / GIB,
        "real_shape_memory_measured_anon_gib": (after["RssAnon"] - before["RssAnon"]) / GIB,
        "real_shape_memory_measured_file_gib": (after["RssFile"] - before["RssFile"]) / GIB,
        "real_shape_memory_paged_out": float(paged_out > 0),
        "real_shape_estimate_over_measured": estimate.total / held,
    }


def memory_bandwidth(threads: int, mib: int = 256, repeats: int = 3) -> float:
    """Bytes per second ``threads`` threads read from memory (each sums its own ``mib`` MiB of
    float64; numpy releases the GIL while it sums): the best of ``repeats``."""
    blocks = [np.ones(mib * 2**20 // 8) for _ in range(threads)]
    best = 0.0
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            started = time.perf_counter()
            list(pool.map(np.sum, blocks))
            best = max(best, threads * mib * 2**20 / (time.perf_counter() - started))
    return best


def bytes_per_token(path: Path) -> tuple[int, dict[str, int]]:
    """Bytes of weights one decoded token reads: every dense tensor whole, the routed experts'
    tensors at ``expert_used_count / expert_count``, one row of the token embedding."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    arch = reader.get_field("general.architecture").contents()
    used = reader.get_field(f"{arch}.expert_used_count").contents()
    experts = reader.get_field(f"{arch}.expert_count").contents()
    parts = {"dense": 0, "experts": 0, "embedding_row": 0}
    for t in reader.tensors:
        n = int(t.n_bytes)
        if t.name == "token_embd.weight":
            parts["embedding_row"] += n // int(t.shape[-1])
        elif "_exps." in t.name:
            parts["experts"] += n * used // experts
        else:
            parts["dense"] += n
    return sum(parts.values()), parts


def bandwidth_figures(
    tokens: int, parts: dict[str, int], bandwidth: float, free: float, tg: float | None
) -> dict[str, float | None]:
    """The weights a token reads (``bytes_per_token``), the read ``bandwidth`` in bytes/s and the
    tokens/s it allows, and free decoding's and llama-bench's ``tg`` tokens/s ÷ that bound."""
    return {
        "real_shape_bytes_per_token_mib": tokens / 2**20,
        "real_shape_expert_bytes_per_token_mib": parts["experts"] / 2**20,
        "memory_bandwidth_gb_s": bandwidth / 1e9,
        "real_shape_bandwidth_bound_tok_s": bandwidth / tokens,
        "real_shape_achieved_over_bound": free * tokens / bandwidth,
        "real_shape_llama_bench_over_bound": tg * tokens / bandwidth if tg else None,
    }
