"""What ``bench --only real_shape`` measures side by side in one process, on contexts made from its
one loaded model taking turns, so that the machine's drift between runs cancels:

- the context setups (``context_setups``): the pack's own context against one with 8
  recurrent-state snapshots and against one set up as llama-bench sets its own, and the pack's
  whole decoding loop against that last one;
- flash attention (``flash_attn_pair``): llama.cpp's ``auto`` against off after a few thousand
  tokens of context, prefill and decoding.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...errors import Cancelled, MangakaError
from ...llm.base import PRESETS
from ...llm.decode import decode
from .common import median, paired, random_tokens

# The context setups compared in one process (context_setups): rounds of SETUP_TOKENS decodes on
# each in turn after SETUP_PROMPT tokens; the VM's speed moves by a fifth between seconds, so only
# many short rounds side by side separate a cost of a few per cent.
SETUP_ROUNDS = {True: 2, False: 8}  # by quick
SETUP_TOKENS = {True: 8, False: 24}
SETUP_PROMPT = 64
SNAPSHOTS = 8  # recurrent-state snapshots of the compared setup (the pack's default until 2026-12-04)
# Flash attention auto (on, on a CPU) against off (flash_attn_pair): two contexts of the loaded
# model, prefilled in turn to this depth, then rounds of one-token decodes on each in turn. On a
# CPU the loader turns auto off for this architecture (loading.flash_attn_mode); this re-measures
# why on every run, and on a GPU whether auto stays the better there.
FLASH_ATTN_DEPTH = {True: 2048, False: 4096}  # by quick
FLASH_ATTN_ROUNDS = {True: 2, False: 4}
FLASH_ATTN_TOKENS = {True: 8, False: 12}


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


class _PackLoop:
    """The pack's whole decoding loop (``mangaka.llm.decode.decode``, greedy, no schema: the
    sampler, the library's bookkeeping, the abort check) on the loaded model's own context, a few
    tokens a round, continuing from round to round."""

    def __init__(self, raw: Any, rng: np.random.Generator) -> None:
        self.raw, self.rng = raw, rng
        self.held: list[int] = []  # the tokens the context holds, and the next one

    def rate(self, n_tokens: int) -> float:
        """Tokens/s of ``n_tokens`` more, each evaluated one at a time."""
        raw, held = self.raw, self.held
        if not held:  # a prompt as the bare contexts', evaluated before the clock starts
            raw.reset()  # the next evaluation drops the memory from position 0 on
            held.extend(random_tokens(self.rng, raw.n_vocab(), SETUP_PROMPT + 1))
            raw.eval(held[:-1])
        started = time.perf_counter()
        greedy = PRESETS["greedy"]
        done = decode(raw, list(held), len(held) - 1, sampling=greedy, constraint=None, budget=n_tokens)
        elapsed = time.perf_counter() - started
        # evaluated: the held token, then each generated one but the last (unless it ended)
        evaluated = len(done.tokens) + (done.finish_reason != "length")
        held.extend(done.tokens)
        if done.finish_reason != "length":  # an end-of-generation token: start again next round
            held.clear()
        return evaluated / elapsed


def context_setups(llm: Any, quick: bool) -> dict[str, float]:
    """Decoding on three contexts of the one loaded model, in alternating rounds, each of the
    tokens it needs: the pack's own setup (the loaded context's parameters: no recurrent-state
    snapshots by default), the same with ``SNAPSHOTS`` snapshots a sequence (``n_rs_seq``, how
    exact jump-forward rolled back until 2026-12-04), and llama-bench's (batch 2048, flash
    attention ``auto``, no snapshots); and in the same rounds the pack's whole decoding loop
    (``_PackLoop``) on the loaded model's own context. Medians of the rounds, and three ratios of the
    rounds' pairs: the pack's context ÷ with snapshots (what they would cost each decoded token),
    the pack's context ÷ llama-bench's setup, and the pack's decoding loop ÷ llama-bench's setup
    (what the pack gets of llama.cpp's own one-token loop, side by side)."""
    import llama_cpp

    raw = llm.model.llama
    abort = llm.model.abort_flag
    rounds, per_round = SETUP_ROUNDS[quick], SETUP_TOKENS[quick]
    own = raw.context_params

    def params(**changes: int) -> Any:
        copy = type(own).from_buffer_copy(own)
        for name, value in changes.items():
            setattr(copy, name, value)
        return copy

    # Each a context of the tokens it needs, as llama-bench's: the depth costs nothing measurable
    # at these lengths, and a 32k context's KV cache each would crowd the page cache.
    n_ctx = SETUP_PROMPT + rounds * per_round + 128
    setups = {
        "pack": params(n_ctx=n_ctx),
        "snapshots": params(n_ctx=n_ctx, n_rs_seq=SNAPSHOTS),
        "bench_like": params(
            n_ctx=n_ctx, n_batch=2048, n_ubatch=512, n_rs_seq=0,
            flash_attn_type=llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
        ),
    }  # fmt: skip
    rng = np.random.default_rng(2)
    n_vocab = raw.n_vocab()

    decode_on = decoder(raw, abort, "the setups compared")

    pack_loop = _PackLoop(raw, rng)

    def run() -> dict[str, list[float]]:
        with made_contexts(raw, setups) as contexts:
            for ctx in contexts.values():
                decode_on(ctx, random_tokens(rng, n_vocab, SETUP_PROMPT))
            rates: dict[str, list[float]] = {name: [] for name in [*contexts, "pack_loop"]}
            for _ in range(rounds):
                for name, ctx in contexts.items():
                    rates[name].append(one_at_a_time(decode_on, ctx, random_tokens(rng, n_vocab, per_round)))
                rates["pack_loop"].append(pack_loop.rate(per_round))
            return rates

    rates = llm.model.decode_thread.run(run, abort)
    return {
        "real_shape_setup_pack_tok_s": median(rates["pack"]),
        "real_shape_setup_snapshots_tok_s": median(rates["snapshots"]),
        "real_shape_setup_bench_like_tok_s": median(rates["bench_like"]),
        "real_shape_snapshots_cost": paired(rates["pack"], rates["snapshots"]),
        "real_shape_pack_over_bench_like_setup": paired(rates["pack"], rates["bench_like"]),
        "real_shape_setup_pack_loop_tok_s": median(rates["pack_loop"]),
        "real_shape_pack_loop_over_bench_like_setup": paired(rates["pack_loop"], rates["bench_like"]),
    }


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

    decode_on = decoder(raw, abort, "the flash-attention contexts")

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
                decode_on(contexts[name], random_tokens(rng, n_vocab, depth // 2))
                spent[name] += time.perf_counter() - started
            for name in modes:
                rates[f"pp_{name}"].append(2 * (depth // 2) / spent[name])
            for turn in range(rounds):
                for name in list(modes)[:: 1 if turn % 2 else -1]:  # off first, then auto first, ...
                    tokens = random_tokens(rng, n_vocab, per_round)
                    rates[f"tg_{name}"].append(one_at_a_time(decode_on, contexts[name], tokens))
            return rates

    rates = llm.model.decode_thread.run(run, abort)
    return {
        "real_shape_flash_attn_depth": depth,
        "real_shape_flash_attn_auto_tok_s": median(rates["tg_auto"]),
        "real_shape_flash_attn_off_tok_s": median(rates["tg_off"]),
        "real_shape_flash_attn_off_over_auto": paired(rates["tg_off"], rates["tg_auto"]),
        "real_shape_flash_attn_prefill_off_over_auto": rates["pp_off"][0] / rates["pp_auto"][0],
    }
