"""Our own generation loop over a loaded llama-cpp-python model, with fast constrained decoding.

``decode(llama, tokens, start, …)`` evaluates the prompt tokens the context does not hold yet,
then samples one token at a time with a llama.cpp sampler chain built from ``Sampling``
(``mangaka.llm.sampler.TokenSampler``, shared with ``mangaka.llm.constrain``):
greedy when the temperature is 0, otherwise penalties → top-k → top-p → min-p → temperature →
a seeded draw, the chain llama-cpp-python itself builds. A ``Constraint``
(``mangaka.llm.constrain``) chooses each token when the output must follow a grammar.

The library's bookkeeping stays true: every token goes through ``Llama.eval``, so
``llama.n_tokens`` and ``llama._input_ids`` always describe what the context holds, and the
library's own prefix reuse keeps working on the next call.

Jump-forward (``jump_forward``; the llguidance engine only, others decode one token at a time):

- ``"exact"`` (default): after each sampled token, the tokens the grammar forces next (keys,
  punctuation, the rest of an enum value; spelled as the model spelled the same bytes earlier in
  the call, up to the token that reached past them, else as llguidance tokenizes them:
  ``constrain.Spellings``) are evaluated with it in one batch (at most ``CPU_MAX_DRAFT`` + 1 rows
  on the CPU), logits for every row, and verified row by row: each is kept while it is the token
  the sampler itself chooses there (grammar applied, as one token at a time would); at the first
  other choice the rest is dropped from the memory and that choice is the next token. The choices
  are those of one token at a time, from logits that differ only by floating-point noise:
  llama.cpp's CPU kernels sum a batch's rows in another order than a single token's (over a long
  prompt, as much as a prompt evaluated in one batch differs from the same tokens decoded one by
  one). Greedy output changes only where that flips a near tie; seeded sampling draws another
  sample of the same distribution. The rows after the first other choice are dropped from the
  memory: an attention cache drops positions; a hybrid or recurrent model's state (``qwen35moe``'s
  Gated DeltaNet layers) cannot, so it is saved before each verify batch (``StateCheckpoint``, one
  copy of the recurrent state, about 63 MB on Qwen3.5-35B-A3B) and, where the draft was cut, put
  back and the kept tokens evaluated again. Loaded with recurrent-state snapshots
  (``LoadOptions.rollback_tokens`` > 0) it rolls back through them instead, drafts no longer than
  they are many; the snapshots slow every decoded token (docs/performance.md).
- ``"canonical"``: the forced tokens are taken as llguidance tokenizes them, unverified, logits
  for the last only; any model. Valid output, but the model's own tokens for the same bytes can
  differ (``"appearance`` against ``"`` + ``appearance``), and so can what follows.

Forced tokens count as generated (``on_token``, the budget).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .base import Sampling
from .native import gpu_offload, import_llama_cpp
from .prefix import is_recurrent
from .sampler import TokenSampler

if TYPE_CHECKING:
    import numpy as np

    from .constrain import Constraint

log = logging.getLogger(__name__)

FinishReason = Literal["stop", "length", "cancelled"]
JumpForward = Literal["off", "exact", "canonical"]
JUMP_FORWARD: tuple[str, ...] = ("off", "exact", "canonical")
DEFAULT_JUMP_FORWARD: JumpForward = "exact"
# The longest draft a hybrid model verifies through a ``StateCheckpoint`` (a cut draft's rows are
# evaluated again); the snapshots' count bounds it otherwise, a batch on attention-only models.
MAX_DRAFT = 16
# The longest draft where the model runs on the CPU: a verify batch of at most 7 rows. llama.cpp's
# CPU backend multiplies K-quant weights by a batch of 8 rows or more in a tiled kernel that costs
# as much at 8 rows as at 16 (measured on 2 cores, Qwen3.5-35B-A3B's shape at Q3_K_M, logits for
# every row: 7 rows 5.1 single tokens, 8 rows 7.5, 16 rows 10.4), so a forced run longer than 6
# tokens is verified in batches of 7 rows, each next one starting from the last one's logits
# (docs/performance.md).
CPU_MAX_DRAFT = 6


_CONTROL: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_CONTROL_LOCK = threading.Lock()


def control_tokens(llama: Any) -> np.ndarray:
    """The model's control tokens that do not end generation (``<|im_start|>``,
    ``<|vision_start|>``, …), as token ids; computed once per loaded model.

    Constrained output never contains them: llama.cpp's grammar would read such a token as its
    text (``<|box_start|>`` counts as 13 characters of a JSON string) while the detokenized reply
    drops it, so the reply would no longer be what the grammar checked.
    """
    import numpy as np

    with _CONTROL_LOCK:
        found = _CONTROL.get(llama)
        if found is None:
            lib = import_llama_cpp()
            vocab = llama._model.vocab
            attr, is_eog, control = (
                lib.llama_vocab_get_attr,
                lib.llama_vocab_is_eog,
                lib.LLAMA_TOKEN_ATTR_CONTROL,
            )
            ids = [
                t for t in range(int(llama.n_vocab())) if attr(vocab, t) & control and not is_eog(vocab, t)
            ]
            found = np.array(ids, dtype=np.int64)
            _CONTROL[llama] = found
        return found


@dataclass
class DecodeResult:
    """What ``decode`` produced: the generated tokens (no end-of-generation token), why it stopped
    and how many prompt tokens it evaluated (the rest were already in the context)."""

    tokens: list[int]
    finish_reason: FinishReason
    prompt_tokens_decoded: int


def _check_context(llama: Any, tokens: Sequence[int], start: int) -> None:
    if not tokens:
        raise ValueError("decode needs at least one prompt token")
    if not 0 <= start <= len(tokens):
        raise ValueError(f"start {start} is outside the prompt of {len(tokens)} tokens")
    if llama.n_tokens != start:
        raise ValueError(
            f"the context holds {llama.n_tokens} tokens but start is {start}; "
            "truncate or reset the context to the reused prefix first"
        )
    if start:
        held = llama._input_ids[:start].tolist()
        if held != list(tokens[:start]):
            raise ValueError("the context's tokens differ from the prompt's first `start` tokens")


def _evaluate_prompt(llama: Any, tokens: Sequence[int], start: int) -> int:
    """Evaluate ``tokens[start:]``; returns how many tokens were evaluated.

    When the whole prompt is already in the context, its last token is removed from the memory
    and evaluated again, since sampling needs its logits. Recurrent and hybrid models
    (``qwen35moe``) cannot remove one position from their memory: give them at least one token
    to evaluate (``start < len(tokens)``).
    """
    if start == len(tokens):
        if not llama._ctx.kv_cache_seq_rm(-1, start - 1, -1):
            raise ValueError(
                "the whole prompt is already in the context and this model's memory cannot drop "
                "its last token (recurrent or hybrid model); call decode with start < len(tokens)"
            )
        llama.n_tokens = start - 1
        start -= 1
    llama.eval(list(tokens[start:]))
    return len(tokens) - start


def rewind_limit(llama: Any) -> int:
    """How many of its last positions the model's memory can drop at once: attention-only models
    any (a batch's worth); recurrent and hybrid ones (``qwen35moe``'s Gated DeltaNet layers) as
    many as the recurrent-state snapshots the context keeps (``LoadOptions.rollback_tokens``;
    0, none, without them)."""
    if not is_recurrent(llama):
        return int(llama.n_batch)
    return int(import_llama_cpp().llama_n_rs_seq(llama._ctx.ctx))


def eval_rows(llama: Any, tokens: list[int]) -> None:
    """Evaluate ``tokens`` in one batch with logits for every row (``Llama.eval`` keeps the last
    row's only), keeping the library's bookkeeping (``n_tokens``, ``input_ids``)."""
    n_past = llama.n_tokens
    llama._ctx.kv_cache_seq_rm(-1, n_past, -1)
    llama._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[n_past : n_past + len(tokens)] = tokens
    llama.n_tokens = n_past + len(tokens)


def rewind(llama: Any, n_tokens: int) -> None:
    """Drop every position from ``n_tokens`` on, at most ``rewind_limit`` of them, once between
    two evaluations (a recurrent memory's rollback is used up by the next evaluation)."""
    if llama.n_tokens > n_tokens:
        if not llama._ctx.kv_cache_seq_rm(0, n_tokens, -1):
            raise RuntimeError(f"llama.cpp could not drop positions from {n_tokens} on")
        llama.n_tokens = n_tokens


class StateCheckpoint:
    """The recurrent part of sequence 0's memory, saved before a verify batch and put back where
    its draft was cut (llama.cpp's partial sequence state, kept in the memory's own buffers: on
    the GPU where the layers are, no copy through the host). One copy of the recurrent state;
    the attention layers' cache is left alone (it drops positions itself). llama-server rolls
    back its speculative drafts on hybrid models the same way."""

    def __init__(self, llama: Any) -> None:
        lib = import_llama_cpp()
        self.lib, self.llama = lib, llama
        self.flags = lib.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | lib.LLAMA_STATE_SEQ_FLAGS_ON_DEVICE
        self.buffer: Any = None
        self.size = 0  # bytes of the last save
        self.n_past = -1

    def save(self) -> None:
        """Save the recurrent state as it is after ``llama.n_tokens`` tokens."""
        import ctypes

        ctx = self.llama._ctx.ctx
        size = int(self.lib.llama_state_seq_get_size_ext(ctx, 0, self.flags))
        if self.buffer is None or size > len(self.buffer):
            self.buffer = (ctypes.c_uint8 * size)()
        if size == 0 or self.lib.llama_state_seq_get_data_ext(ctx, self.buffer, size, 0, self.flags) != size:
            raise RuntimeError("llama.cpp could not save the recurrent state before a verify batch")
        self.size, self.n_past = size, int(self.llama.n_tokens)

    def restore(self, tokens: list[int]) -> None:
        """Put the saved state back, drop every position after it, then evaluate ``tokens`` (the
        kept ones): the memory holds what one token at a time would have left."""
        llama = self.llama
        if self.lib.llama_state_seq_set_data_ext(llama._ctx.ctx, self.buffer, self.size, 0, self.flags) == 0:
            raise RuntimeError("llama.cpp could not restore the recurrent state after a verify batch")
        rewind(llama, self.n_past)  # the attention layers' positions; the state is already there
        llama.eval(tokens)


def _jump_mode(llama: Any, constraint: Constraint | None, wanted: str) -> tuple[str, int]:
    """The jump-forward mode this decode runs with, and the longest draft it may try."""
    if constraint is None or wanted == "off":
        return "off", 0
    if wanted == "canonical":
        return "canonical", 0
    max_draft = draft_limit(llama)
    return ("exact", max_draft) if max_draft > 0 else ("off", 0)


def rolls_back_by_checkpoint(llama: Any) -> bool:
    """True where exact jump-forward drops a cut draft through a ``StateCheckpoint``: hybrid and
    recurrent models loaded without recurrent-state snapshots."""
    return is_recurrent(llama) and rewind_limit(llama) == 0


def draft_limit(llama: Any) -> int:
    """The longest draft exact jump-forward verifies in one batch on this model. A draft of d
    tokens is evaluated with the token before it (d + 1 rows) and at most d of them are dropped
    again: as many as the memory can drop (``rewind_limit``), or ``MAX_DRAFT`` where a
    ``StateCheckpoint`` rolls a hybrid model back; ``CPU_MAX_DRAFT`` unless the whole model,
    output layer included, is offloaded to a GPU (``on_gpu``)."""
    limit = MAX_DRAFT if rolls_back_by_checkpoint(llama) else rewind_limit(llama)
    if not on_gpu(llama):
        limit = min(limit, CPU_MAX_DRAFT)
    return max(0, min(limit, int(llama.n_batch) - 1))


def on_gpu(llama: Any) -> bool:
    """True when every layer of the model, the output layer included, runs on a GPU: a build
    that offloads, loaded with ``n_gpu_layers`` -1 or more than the model has layers."""
    params = getattr(llama, "model_params", None)
    if params is None or not gpu_offload():
        return False
    n_gpu_layers = int(params.n_gpu_layers)
    return n_gpu_layers < 0 or n_gpu_layers > int(import_llama_cpp().llama_model_n_layer(llama.model))


def _verify(
    llama: Any,
    sampler: TokenSampler,
    constraint: Constraint,
    token: int,
    draft: list[int],
    checkpoint: StateCheckpoint | None,
) -> tuple[list[int], int | None]:
    """Evaluate ``token`` and ``draft`` in one batch, logits for every row, and keep the draft's
    tokens while each is the one the sampler chooses from the row before it (the grammar
    applied, as one token at a time would); drop the rest from the memory (through
    ``checkpoint`` where one is given). Returns the kept draft tokens and the sampler's other
    choice where the draft was cut (None when all were kept: the next token is sampled from the
    last row)."""
    kept = llama.n_tokens + 1
    constraint.draft_sizes.append(len(draft))
    if checkpoint is not None:
        checkpoint.save()
    eval_rows(llama, [token, *draft])
    accepted: list[int] = []
    choice: int | None = None
    try:
        for row, forced in enumerate(draft):
            sampler.row = row
            choice = constraint.choose(sampler)
            if choice != forced:
                break
            sampler.accept(forced)
            constraint.accept(forced)
            constraint.forced_tokens += 1
            accepted.append(forced)
            choice = None
    finally:
        sampler.row = -1
    if checkpoint is not None and len(accepted) < len(draft):
        checkpoint.restore([token, *accepted])
        constraint.redone_rows.append(1 + len(accepted))
    else:
        rewind(llama, kept + len(accepted))  # the rows after the first other choice
    return accepted, choice


def decode(
    llama: Any,
    tokens: list[int],
    start: int,
    *,
    sampling: Sampling,
    constraint: Constraint | None,
    budget: int,
    on_token: Callable[[int], bool] | None = None,
    jump_forward: JumpForward = "off",
) -> DecodeResult:
    """Evaluate ``tokens[start:]``, then generate up to ``budget`` tokens.

    On entry the context must hold exactly ``tokens[:start]`` (``llama.n_tokens == start`` and
    ``llama._input_ids[:start] == tokens[:start]``); ``ValueError`` otherwise. Generation stops
    at an end-of-generation token (``"stop"``, the token is not returned), after ``budget``
    tokens (``"length"``), or when ``on_token(n_generated)``, called after each decode step,
    returns True (``"cancelled"``). Each kept token is evaluated before the next is sampled; on
    return the context holds the prompt and the generated tokens, but the last one unless it
    came in a jump-forward batch.

    ``constraint`` (from ``mangaka.llm.constrain.make_constraint``) restricts the output to a
    grammar; it is single-use and stays the caller's to close. ``jump_forward``: one of
    ``JUMP_FORWARD`` (the module's docstring). Errors from llama.cpp (including an abort through
    the context's abort callback) propagate as ``RuntimeError``.
    """
    _check_context(llama, tokens, start)
    lib = import_llama_cpp()
    vocab = llama._model.vocab
    is_eog = lib.llama_vocab_is_eog
    decoded = _evaluate_prompt(llama, tokens, start)
    out: list[int] = []
    finish: FinishReason = "length"
    if budget <= 0:
        return DecodeResult(out, finish, decoded)
    mode, max_draft = _jump_mode(llama, constraint, jump_forward)
    checkpoint = StateCheckpoint(llama) if mode == "exact" and rolls_back_by_checkpoint(llama) else None
    sampler = TokenSampler(llama, sampling, control_tokens(llama) if constraint is not None else None)
    pending: int | None = None  # the sampler's choice where a draft was cut: the next token
    try:
        while True:
            if pending is not None:
                token, pending = pending, None
            elif constraint is None:
                token = sampler.sample_free()
            else:
                token = constraint.choose(sampler)
            if is_eog(vocab, token):
                finish = "stop"
                break
            step = [token]
            draft: list[int] = []
            if constraint is not None:
                sampler.accept(token)
                constraint.accept(token)
                room = budget - len(out) - 1
                if mode == "canonical" and room > 0:
                    step += constraint.forced(room)
                    for forced in step[1:]:
                        sampler.accept(forced)
                elif mode == "exact" and room > 0:
                    draft = constraint.draft(min(room, max_draft))
            out += step
            if draft:
                assert constraint is not None
                accepted, pending = _verify(llama, sampler, constraint, token, draft, checkpoint)
                out += accepted
            stop = on_token is not None and on_token(len(out))
            if stop or len(out) >= budget:
                finish = "cancelled" if stop else finish
                if len(step) > 1 and not draft:  # the context holds every kept token but the last
                    llama.eval(step[:-1])
                break
            if not draft:
                llama.eval(step)
    finally:
        sampler.close()
    return DecodeResult(out, finish, decoded)
