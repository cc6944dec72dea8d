"""What exact jump-forward gains on Qwen3.5-35B-A3B's real shape (``bench --only real_shape``): the
Screenwriter's script call free, constrained with jump-forward off and exact, back to back; and
what its verify batches allow: the time of a batch of rows with logits for every row ÷ one row's,
the saving and putting back of the recurrent state around a batch, and the exact ÷ off ratio these
give for the run's own drafts (``jump_forward_bound``)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...llm.decode import StateCheckpoint, eval_rows, rolls_back_by_checkpoint
from .common import median, paired, random_tokens
from .decoding import script_rates

# Rounds of the script call's three modes (free, off, exact), back to back, medians reported: on
# the development VM one round gave exact ÷ free 1.09 on one full run and 1.18 on the next.
SCRIPT_ROUNDS = 3
BATCH_ROWS = (1, 2, 4, 7, 8, 16)  # verify batches timed: drafts ≤ 6 on the CPU (7 rows), ≤ 16 on a GPU
BATCH_CONTEXT = 256  # tokens of context before each timed batch


def _batch_costs(llm: Any, repeats: int = 3) -> tuple[dict[int, float], float, float]:
    """Seconds one evaluation of ``n`` rows with logits for every row takes (the batch exact
    jump-forward verifies: the sampled token and its draft) after ``BATCH_CONTEXT`` tokens, for
    each ``n`` of ``BATCH_ROWS``, and the seconds of saving and of putting back the recurrent
    state around it (``StateCheckpoint``, its kept rows not evaluated again): the best of
    ``repeats``."""
    raw = llm.model.llama
    rng = np.random.default_rng(1)
    n_vocab = raw.n_vocab()

    def run() -> tuple[dict[int, float], float, float]:
        raw.reset()
        raw.eval(random_tokens(rng, n_vocab, BATCH_CONTEXT))
        checkpoint = StateCheckpoint(raw)
        best: dict[int, float] = {}
        save = restore = math.inf
        for _ in range(repeats):
            for n in BATCH_ROWS:
                rows = random_tokens(rng, n_vocab, n)
                started = time.perf_counter()
                checkpoint.save()
                saved = time.perf_counter()
                eval_rows(raw, rows)
                evaluated = time.perf_counter()
                checkpoint.restore([])
                save, restore = min(save, saved - started), min(restore, time.perf_counter() - evaluated)
                best[n] = min(best.get(n, math.inf), evaluated - saved)
        raw.reset()
        return best, save, restore

    return llm.model.decode_thread.run(run, llm.model.abort_flag)


def batch_cost(costs: dict[int, float], rows: int) -> float:
    """Seconds for a batch of ``rows`` rows: linear between the timed sizes, and past the largest
    along the last two's slope."""
    sizes = sorted(costs)
    if rows <= sizes[-1]:
        return float(np.interp(rows, sizes, [costs[n] for n in sizes]))
    a, b = sizes[-2], sizes[-1]
    return costs[b] + (rows - b) * (costs[b] - costs[a]) / (b - a)


def jump_forward_bound(
    costs: dict[int, float],
    tokens: int,
    forced: int,
    drafts: list[int],
    redone: Sequence[int] = (),
    checkpoint: tuple[float, float] = (0.0, 0.0),
) -> float:
    """Tokens/s with exact jump-forward ÷ without that the timed batches allow for a run of
    ``tokens`` generated tokens, ``forced`` of them forced, whose verified drafts had ``drafts``
    tokens: without, one single-row evaluation per token; with, one per sampled token, a batch of
    1 + d rows where it came with a draft of d, and a batch of r rows for each cut draft whose
    kept rows were evaluated again after a rollback (``redone``), with the seconds of saving the
    state before each draft and of putting it back before each of those (``checkpoint``; grammar
    time left out of both)."""
    single = costs[1]
    sampled = tokens - forced
    save, restore = checkpoint
    spent = (sampled - len(drafts)) * single + sum(batch_cost(costs, 1 + d) + save for d in drafts)
    spent += sum(batch_cost(costs, r) + restore for r in redone)
    return tokens * single / spent if spent > 0 else math.nan


def script_calls(llm: Any, n_tokens: int, repeats: int) -> dict[str, float]:
    """The Screenwriter's script call: free, constrained with jump-forward off and exact, and
    what the timed verify batches say exact jump-forward can gain on this model."""
    rates, forced, texts, last = script_rates(llm, ("free", "off", "exact"), n_tokens, repeats)
    costs, save, restore = _batch_costs(llm)
    exact = last["exact"]
    n_forced = round(forced["exact"][-1] * max(1, exact["tokens"]))
    drafts = exact["drafts"]
    checkpointed = rolls_back_by_checkpoint(llm.model.llama)  # the state saved before each draft
    return {
        "real_shape_free_tok_s": median(rates["free"]),
        "real_shape_script_exact_tok_s": median(rates["exact"]),
        "real_shape_script_plain_tok_s": median(rates["off"]),
        "real_shape_jump_forward_over_plain": paired(rates["exact"], rates["off"]),
        "real_shape_constrained_over_free": paired(rates["exact"], rates["free"]),
        "real_shape_forced_fraction": median(forced["exact"]),
        "real_shape_exact_same_text": float(texts["exact"] == texts["off"]),
        **{f"real_shape_batch_cost_rows{n}": costs[n] / costs[1] for n in BATCH_ROWS[1:]},
        "real_shape_draft_rows_mean": 1 + sum(drafts) / len(drafts) if drafts else 1.0,
        "real_shape_drafted_fraction": len(drafts) / max(1, exact["tokens"] - n_forced),
        "real_shape_redone_fraction": len(exact["redone"]) / len(drafts) if drafts else 0.0,
        "real_shape_checkpoint_save_ms": save * 1e3,
        "real_shape_checkpoint_restore_ms": restore * 1e3,
        "real_shape_jump_forward_bound": jump_forward_bound(
            costs,
            exact["tokens"],
            n_forced,
            drafts,
            exact["redone"],
            (save, restore) if checkpointed else (0.0, 0.0),
        ),
        "real_shape_script_prompt_tokens": last["free"]["prompt"],
    }
