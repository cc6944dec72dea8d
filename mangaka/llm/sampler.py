"""The token sampler shared by ``mangaka.llm.decode`` and ``mangaka.llm.constrain``.

``TokenSampler`` is a llama.cpp sampler chain built from ``Sampling`` with a reusable candidates
array that a constraint may mask. It lives below both: the decoding loop builds one, and a
``Constraint`` works on it, so neither of those modules needs the other's types.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

from .base import Sampling
from .native import import_llama_cpp

if TYPE_CHECKING:
    import numpy as np

# llama-cpp-python's default ``last_n_tokens_size``: how far back the repetition penalties look.
PENALTY_LAST_N = 64


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
        # which row of the last batch's logits the constrained path reads: -1, the last, except
        # while the decoder verifies a jump-forward draft row by row
        self.row = -1

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
        return int(self._llama_cpp.llama_sampler_sample(self.chain, self._ctx, self.row))

    def _last_logits(self) -> Any:
        ptr = self._llama_cpp.llama_get_logits_ith(self._ctx, self.row)
        if not ptr:
            raise RuntimeError(f"llama.cpp has no logits for batch row {self.row}; evaluate a token first")
        return self._np.ctypeslib.as_array(ptr, shape=(self._n,))

    # -- constrained: fill, let the constraint look, pick, accept --------------------------------

    def fill(self) -> None:
        """Copy the last evaluated token's logits (batch row ``row``) into the candidates array
        (all tokens, in id order)."""
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
