"""Our own generation loop over a loaded llama-cpp-python model, with fast constrained decoding.

``decode(llama, tokens, start, …)`` evaluates the prompt tokens the context does not hold yet,
then samples one token at a time with a llama.cpp sampler chain built from ``Sampling``:
greedy when the temperature is 0, otherwise penalties → top-k → top-p → min-p → temperature →
a seeded draw, the chain llama-cpp-python itself builds. A ``Constraint``
(``mangaka.llm.constrain``) chooses each token when the output must follow a grammar.

The library's bookkeeping stays true: every token goes through ``Llama.eval``, so
``llama.n_tokens`` and ``llama._input_ids`` always describe what the context holds, and the
library's own prefix reuse keeps working on the next call.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .base import Sampling
from .native import import_llama_cpp

if TYPE_CHECKING:
    import numpy as np

    from .constrain import Constraint

log = logging.getLogger(__name__)

FinishReason = Literal["stop", "length", "cancelled"]

# llama-cpp-python's default ``last_n_tokens_size``: how far back the repetition penalties look.
PENALTY_LAST_N = 64


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


class TokenSampler:
    """A llama.cpp sampler chain built from ``Sampling``, and a reusable candidates array.

    Two ways to sample:

    - ``sample_free()``: llama.cpp fills the candidates from the logits, applies the chain and
      accepts the token, all in C (unconstrained decoding);
    - ``fill()`` then ``pick()``: the logits are copied into our own candidates array, which a
      constraint may inspect or mask (``logits``, ``pointer``) before the chain picks a token;
      the caller then calls ``accept(token)``.
    """

    def __init__(self, llama: Any, sampling: Sampling, banned: np.ndarray | None = None) -> None:
        import numpy as np

        self._banned = banned if banned is not None and len(banned) else None
        self._banned_set = frozenset(self._banned.tolist()) if self._banned is not None else frozenset()
        self._llama_cpp = lib = import_llama_cpp()
        self._ctx = llama._ctx.ctx
        self.n_vocab = n = int(llama.n_vocab())
        self.greedy = sampling.temperature <= 0.0
        # Plain greedy reads the logits in place: llama_sampler_sample copies the whole
        # vocabulary into a candidates array first (0.7 ms a token at 262k, measured; argmax 0.06).
        self._argmax_only = (
            self.greedy and sampling.repeat_penalty == 1.0 and sampling.presence_penalty == 0.0
        )
        self.chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
        try:
            self._build(lib, sampling)
        except BaseException:
            lib.llama_sampler_free(self.chain)
            self.chain = None
            raise
        self._data: np.ndarray | None = None
        self._ids: np.ndarray | None = None
        self._array: Any = None
        self.pointer: Any = None
        self.logits: np.ndarray | None = None
        self._ids_dirty = True
        self._np = np
        self._n = n

    def _build(self, lib: Any, s: Sampling) -> None:
        add = lib.llama_sampler_chain_add
        if s.repeat_penalty != 1.0 or s.presence_penalty != 0.0:
            add(
                self.chain,
                lib.llama_sampler_init_penalties(
                    self.n_vocab, PENALTY_LAST_N, s.repeat_penalty, 0.0, s.presence_penalty
                ),
            )
        if self.greedy:
            add(self.chain, lib.llama_sampler_init_greedy())
            return
        add(self.chain, lib.llama_sampler_init_top_k(s.top_k))
        add(self.chain, lib.llama_sampler_init_top_p(s.top_p, 1))
        add(self.chain, lib.llama_sampler_init_min_p(s.min_p, 1))
        add(self.chain, lib.llama_sampler_init_temp(s.temperature))
        add(self.chain, lib.llama_sampler_init_dist(s.seed & 0xFFFFFFFF))

    def _allocate(self) -> None:
        np = self._np
        lib = self._llama_cpp
        dtype = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        assert dtype.itemsize == ctypes.sizeof(lib.llama_token_data)
        self._data = np.zeros(self._n, dtype=dtype)
        self._ids = np.arange(self._n, dtype=np.int32)
        self.logits = self._data["logit"]
        self._array = lib.llama_token_data_array(
            data=ctypes.cast(self._data.ctypes.data, lib.llama_token_data_p),
            size=self._n,
            selected=-1,
            sorted=False,
        )
        self.pointer = ctypes.pointer(self._array)

    # -- unconstrained -------------------------------------------------------------------------

    def sample_free(self) -> int:
        """Sample from the last evaluated token's logits and accept the token into the chain."""
        if self._argmax_only:
            # Same choice as llama.cpp's greedy sampler: the first of the highest logits.
            return int(self._np.argmax(self._last_logits()))
        return int(self._llama_cpp.llama_sampler_sample(self.chain, self._ctx, -1))

    def _last_logits(self) -> Any:
        ptr = self._llama_cpp.llama_get_logits_ith(self._ctx, -1)
        if not ptr:
            raise RuntimeError("llama.cpp has no logits for the last token; evaluate a token first")
        return self._np.ctypeslib.as_array(ptr, shape=(self._n,))

    # -- constrained: fill, let the constraint look, pick, accept --------------------------------

    def fill(self) -> None:
        """Copy the last evaluated token's logits into the candidates array (all tokens, in id order)."""
        if self._data is None:
            self._allocate()
        assert self._data is not None and self.logits is not None
        src = self._last_logits()
        if self._ids_dirty:
            # A sampling chain sorts and truncates the array; greedy only reads it.
            self._data["id"] = self._ids
            self._ids_dirty = not self.greedy
        self._np.copyto(self.logits, src)
        if self._banned is not None:
            self.logits[self._banned] = -self._np.inf
        self._array.size = self._n
        self._array.selected = -1
        self._array.sorted = False

    def first_choice(self) -> int:
        """The token the chain would pick from the current logits (banned tokens excluded), not
        accepted: ``fill()`` then ``pick()``, or for plain greedy the argmax read in place,
        without copying the vocabulary (what a constraint checks first)."""
        if self._argmax_only:
            token = int(self._np.argmax(self._last_logits()))
            if token not in self._banned_set:
                return token
        self.fill()
        return self.pick()

    def pick(self) -> int:
        """Apply the chain to the candidates as they are now; return the chosen token (not accepted)."""
        assert self._data is not None
        self._llama_cpp.llama_sampler_apply(self.chain, self.pointer)
        selected = self._array.selected
        if not 0 <= selected < self._array.size:
            raise RuntimeError("the sampler chain selected no token")
        return int(self._data["id"][selected])

    def selected_logit(self) -> float:
        assert self._data is not None
        return float(self._data["logit"][self._array.selected])

    def accept(self, token: int) -> None:
        self._llama_cpp.llama_sampler_accept(self.chain, token)

    def close(self) -> None:
        if self.chain is not None:
            self._llama_cpp.llama_sampler_free(self.chain)
            self.chain = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have unloaded the library
            pass


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


def decode(
    llama: Any,
    tokens: list[int],
    start: int,
    *,
    sampling: Sampling,
    constraint: Constraint | None,
    budget: int,
    on_token: Callable[[int], bool] | None = None,
) -> DecodeResult:
    """Evaluate ``tokens[start:]``, then generate up to ``budget`` tokens.

    On entry the context must hold exactly ``tokens[:start]`` (``llama.n_tokens == start`` and
    ``llama._input_ids[:start] == tokens[:start]``); ``ValueError`` otherwise. Generation stops
    at an end-of-generation token (``"stop"``, the token is not returned), after ``budget``
    tokens (``"length"``), or when ``on_token(n_generated)``, called after each token, returns
    True (``"cancelled"``). Each kept token is evaluated before the next is sampled, except the
    last one; on return the context holds the prompt and the generated tokens but the last.

    ``constraint`` (from ``mangaka.llm.constrain.make_constraint``) restricts the output to a
    grammar; it is single-use and stays the caller's to close. Errors from llama.cpp (including
    an abort through the context's abort callback) propagate as ``RuntimeError``.
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
    sampler = TokenSampler(llama, sampling, control_tokens(llama) if constraint is not None else None)
    try:
        while True:
            if constraint is None:
                token = sampler.sample_free()
            else:
                token = constraint.choose(sampler)
            if is_eog(vocab, token):
                finish = "stop"
                break
            if constraint is not None:
                sampler.accept(token)
                constraint.accept(token)
            out.append(token)
            if on_token is not None and on_token(len(out)):
                finish = "cancelled"
                break
            if len(out) >= budget:
                break
            llama.eval([token])
    finally:
        sampler.close()
    return DecodeResult(out, finish, decoded)
