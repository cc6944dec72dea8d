"""What context costs Qwen3.5-35B-A3B's real shape (``bench --only real_shape``): tokens/s decoding
one token at a time after 1k, 8k and 32k tokens of context (``--quick``: 512 and 2048), the
milliseconds each 1,000 tokens add, and the attention arithmetic rate that time implies."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from .common import random_tokens

DEPTH_TOKENS = 16  # tokens decoded one at a time at each context depth


def decode_at_depths(llm: Any, depths: tuple[int, ...]) -> dict[str, float]:
    """Tokens/s decoding one token at a time after ``depth`` tokens of context, for each depth."""
    raw = llm.model.llama
    rng = np.random.default_rng(0)
    n_vocab = raw.n_vocab()
    out: dict[str, float] = {}

    def run(depth: int) -> float:
        raw.reset()
        raw.eval(random_tokens(rng, n_vocab, depth))
        started = time.perf_counter()
        for t in random_tokens(rng, n_vocab, DEPTH_TOKENS):
            raw.eval([t])
        return DEPTH_TOKENS / (time.perf_counter() - started)

    for depth in depths:
        out[f"real_shape_decode_tok_s_ctx{depth}"] = llm.model.decode_thread.run(
            lambda d=depth: run(d), llm.model.abort_flag
        )
    raw.reset()
    return out


def attention_flops_per_position(path: Path) -> int:
    """FLOPs a decoded token spends per token of context: in every layer with a KV cache (the
    ones holding ``attn_k``), each query head's dot product with a cached key and its weighted
    sum of the cached value, two FLOPs a multiply-add."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    arch = reader.get_field("general.architecture").contents()
    heads = reader.get_field(f"{arch}.attention.head_count").contents()
    width = sum(reader.get_field(f"{arch}.attention.{kind}_length").contents() for kind in ("key", "value"))
    layers = sum(1 for t in reader.tensors if t.name.endswith(".attn_k.weight"))
    return 2 * heads * width * layers


def context_cost(rates: dict[int, float], flops_per_position: int) -> dict[str, float]:
    """From decode tokens/s at several context depths: the milliseconds each 1,000 more tokens of
    context add to a token (between the shortest and the longest depth), and the attention
    arithmetic rate that time implies (GFLOP/s)."""
    short, long = min(rates), max(rates)
    added = 1 / rates[long] - 1 / rates[short]
    return {
        "real_shape_context_ms_per_1k": 1e6 * added / (long - short),
        "real_shape_attention_gflop_s": flops_per_position * (long - short) / added / 1e9
        if added > 0
        else math.nan,
    }
