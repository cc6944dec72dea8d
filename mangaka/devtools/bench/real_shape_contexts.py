"""Contexts made from ``bench real_shape``'s one loaded model, and what it measures on them side
by side: llama.cpp's flash attention ``auto`` against off (``flash_attn_pair``); the context setups
of :mod:`mangaka.devtools.bench.real_shape` use the same helpers."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...errors import Cancelled, MangakaError
from .common import median, paired

# Flash attention auto (on, on a CPU) against off (flash_attn_pair): two contexts of the loaded
# model, prefilled in turn to this depth, then rounds of one-token decodes on each in turn. On a
# CPU the loader turns auto off for this architecture (loading.flash_attn_mode); this re-measures
# why on every run, and on a GPU whether auto stays the better there.
FLASH_ATTN_DEPTH = {True: 2048, False: 4096}  # by quick
FLASH_ATTN_ROUNDS = {True: 2, False: 4}
FLASH_ATTN_TOKENS = {True: 8, False: 12}


def random_tokens(rng: np.random.Generator, n_vocab: int, n: int) -> list[int]:
    """``n`` random ordinary tokens (clear of the vocabulary's special ends)."""
    return [int(t) for t in rng.integers(300, n_vocab - 300, n)]


@contextlib.contextmanager
def made_contexts(raw: Any, setups: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A llama.cpp context of ``raw``'s model for each named set of context parameters, freed on
    the way out."""
    import llama_cpp

    contexts: dict[str, Any] = {}
    try:
        for name, cparams in setups.items():
            ctx = llama_cpp.llama_init_from_model(raw.model, cparams)
            if not ctx:
                raise MangakaError(f"bench real_shape: llama.cpp could not make the {name} context")
            contexts[name] = ctx
        yield contexts
    finally:
        for ctx in contexts.values():
            llama_cpp.llama_free(ctx)


def decoder(raw: Any, abort: list[bool], what: str) -> Callable[[Any, list[int]], None]:
    """``decode(ctx, tokens)`` for contexts made from ``raw``'s model (``made_contexts``), in
    ``raw``'s batches; these contexts have no abort callback, so ``abort`` stops them between
    batches. ``what``: the contexts, for the error."""
    import llama_cpp

    n_batch = raw.context_params.n_batch

    def decode(ctx: Any, tokens: list[int]) -> None:
        for start in range(0, len(tokens), n_batch):
            if abort[0]:
                raise Cancelled("bench real_shape: interrupted")
            part = tokens[start : start + n_batch]
            batch = (llama_cpp.llama_token * len(part))(*part)
            if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(batch, len(part))) != 0:
                raise MangakaError(f"bench real_shape: a decode failed on a context of {what}")

    return decode


def one_at_a_time(decode: Callable[[Any, list[int]], None], ctx: Any, tokens: list[int]) -> float:
    """Tokens/s decoding ``tokens`` on ``ctx`` one token a call."""
    started = time.perf_counter()
    for token in tokens:
        decode(ctx, [token])
    return len(tokens) / (time.perf_counter() - started)


def flash_attn_pair(llm: Any, quick: bool) -> dict[str, float]:
    """Prefill (in the pack's batches) and one-token decoding after ``FLASH_ATTN_DEPTH`` tokens of
    context on two contexts made from the one loaded model, llama.cpp's flash attention ``auto``
    and off, taking turns (the prefill in two halves, each mode first once; the decode rounds
    alternating which goes first): each mode's median decode tokens/s, the median of the rounds'
    off ÷ auto, and the prefill's off ÷ auto."""
    import llama_cpp

    raw = llm.model.llama
    abort = llm.model.abort_flag
    depth, rounds, per_round = FLASH_ATTN_DEPTH[quick], FLASH_ATTN_ROUNDS[quick], FLASH_ATTN_TOKENS[quick]
    own = raw.context_params
    modes = {"auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO, "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED}
    rng = np.random.default_rng(3)
    n_vocab = raw.n_vocab()

    decode = decoder(raw, abort, "the flash-attention contexts")

    def setup(kind: int) -> Any:
        cparams = type(own).from_buffer_copy(own)
        cparams.n_ctx = depth + rounds * per_round + 64
        cparams.flash_attn_type = kind
        return cparams

    def run() -> dict[str, list[float]]:
        with made_contexts(raw, {name: setup(kind) for name, kind in modes.items()}) as contexts:
            rates: dict[str, list[float]] = {f"{kind}_{name}": [] for kind in ("pp", "tg") for name in modes}
            spent = dict.fromkeys(modes, 0.0)
            for name in ["auto", "off", "off", "auto"]:  # in halves, each mode first once
                started = time.perf_counter()
                decode(contexts[name], random_tokens(rng, n_vocab, depth // 2))
                spent[name] += time.perf_counter() - started
            for name in modes:
                rates[f"pp_{name}"].append(2 * (depth // 2) / spent[name])
            for turn in range(rounds):
                for name in list(modes)[:: 1 if turn % 2 else -1]:  # off first, then auto first, ...
                    tokens = random_tokens(rng, n_vocab, per_round)
                    rates[f"tg_{name}"].append(one_at_a_time(decode, contexts[name], tokens))
            return rates

    rates = llm.model.decode_thread.run(run, abort)
    return {
        "real_shape_flash_attn_depth": depth,
        "real_shape_flash_attn_auto_tok_s": median(rates["tg_auto"]),
        "real_shape_flash_attn_off_tok_s": median(rates["tg_off"]),
        "real_shape_flash_attn_off_over_auto": paired(rates["tg_off"], rates["tg_auto"]),
        "real_shape_flash_attn_prefill_off_over_auto": rates["pp_off"][0] / rates["pp_auto"][0],
    }
