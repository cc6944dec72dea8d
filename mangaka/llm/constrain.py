"""Grammar-constrained token choice for ``mangaka.llm.decode``: three engines, one language.

Every engine is built from a GBNF grammar (``grammar.schema_to_gbnf``, control-character fix
included) and the loaded model, and enforces llama.cpp's reading of that grammar, so with greedy
sampling all three produce the same tokens as llama-cpp-python's ``grammar=`` path. llguidance
gets the grammar through its own GBNF-to-Lark converter, with forcing turned off (by default it
narrows the mask to a single token where the grammar forces bytes) and the token bytes llama.cpp's
grammar sees (special tokens as their text). One deliberate difference remains: llguidance never
allows the bytes F5-FF, which cannot occur in UTF-8; llama.cpp's grammar reads them as the start
of a 4-byte character (only single-byte fallback tokens carry them; trained models never pick them).

- ``"llguidance"`` (default): the sampled token is checked first with llguidance's matcher (about
  a microsecond); only when it is rejected is the token mask computed (0.01-1 ms at a 262k
  vocabulary) and applied before sampling again. Its tokenizer tables are built once per loaded
  model (1-3 s at a 250k vocabulary) and cached.
- ``"lazy"``: llama.cpp's own grammar sampler used the way llama.cpp's common sampler uses it:
  sample without the grammar, check that one token against it (about 10 microseconds), and run the
  grammar over the whole vocabulary only when the token is rejected (30-80 ms at a 262k vocabulary).
- ``"builtin"``: the reference, what llama-cpp-python's ``grammar=`` does: the grammar over the
  whole vocabulary before every token.

Each constraint counts ``tokens`` (tokens it chose) and ``full_passes`` (whole-vocabulary grammar
or mask passes it ran). ``make_constraint(name, llama, gbnf)`` builds one; it is single-use.
``llguidance`` missing, or a grammar it cannot take, falls back to ``lazy`` with a warning.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import re
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import BackendMissingError, GenerationError
from .native import import_llama_cpp

if TYPE_CHECKING:
    from .sampler import TokenSampler

log = logging.getLogger(__name__)

ENGINES: tuple[str, ...] = ("llguidance", "lazy", "builtin")
# gemma-3-270m (262k vocabulary), greedy, 200 tokens of JSON, 1 thread: free 24-25 tok/s;
# llguidance 0.97-1.01x, lazy 0.86-0.87x, builtin 0.35x (11 of 200 sampled tokens rejected).
# Thread CPU time choosing a token: free 0.9-1.0 ms, llguidance 1.2-1.3, lazy 3.6-4.8, builtin 61-79.
DEFAULT_ENGINE = "llguidance"

_NEG_INF = float("-inf")


class Constraint:
    """Chooses each token so that the output stays in a grammar's language.

    ``choose(sampler)`` returns the token to emit (the sampler's chain has not accepted it yet);
    ``accept(token)`` advances the grammar past a kept token. ``close()`` frees native state.
    """

    name = "constraint"

    def __init__(self) -> None:
        self.tokens = 0
        self.full_passes = 0
        self.forced_tokens = 0  # of ``tokens``, those kept from a jump-forward draft (``Usage``)
        self.draft_sizes: list[int] = []  # exact jump-forward: the draft tokens of each verified batch
        self.redone_rows: list[int] = []  # the rows evaluated again after each cut draft's rollback

    def choose(self, sampler: TokenSampler) -> int:
        raise NotImplementedError

    def accept(self, token: int) -> None:
        raise NotImplementedError

    def forced(self, limit: int) -> list[int]:
        """At most ``limit`` of the tokens the grammar forces next, already accepted (none for
        engines that cannot say)."""
        return []

    def draft(self, limit: int) -> list[int]:
        """At most ``limit`` of the tokens the grammar forces next, not accepted: a guess at what
        the model writes, for the decoder to verify (none for engines that cannot say)."""
        return []

    def close(self) -> None:
        pass

    def __enter__(self) -> Constraint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have unloaded the library
            pass

    def _no_token(self) -> GenerationError:
        return GenerationError(
            f"the grammar allows no token of this model's vocabulary here ({self.name} engine, "
            f"after {self.tokens} tokens); the schema needs characters the model cannot write"
        )


# ------------------------------------------------------------------------------- llama.cpp grammar


class _GrammarConstraint(Constraint):
    """Shared by ``builtin`` and ``lazy``: llama.cpp's grammar sampler over the model's vocabulary."""

    def __init__(self, llama: Any, gbnf: str) -> None:
        super().__init__()
        self._lib = lib = import_llama_cpp()
        self._grammar = lib.llama_sampler_init_grammar(llama._model.vocab, gbnf.encode("utf-8"), b"root")
        if not self._grammar:
            self._grammar = None
            raise GenerationError("llama.cpp could not parse the grammar (see its log for the line)")
        self._one = lib.llama_token_data(0, 0.0, 0.0)
        self._one_array = lib.llama_token_data_array(
            data=ctypes.pointer(self._one), size=1, selected=-1, sorted=False
        )
        self._one_pointer = ctypes.pointer(self._one_array)

    def allows(self, token: int) -> bool:
        """Whether the grammar, in its current state, accepts ``token`` next (end-of-generation
        tokens only when the grammar is complete)."""
        self._one.id = token
        self._one.logit = 1.0
        self._one.p = 0.0
        self._one_array.size = 1
        self._one_array.selected = -1
        self._lib.llama_sampler_apply(self._grammar, self._one_pointer)
        return self._one.logit != _NEG_INF

    def _full_pass(self, sampler: TokenSampler) -> int:
        sampler.fill()
        self.full_passes += 1
        self._lib.llama_sampler_apply(self._grammar, sampler.pointer)
        token = sampler.pick()
        if sampler.selected_logit() == _NEG_INF:
            raise self._no_token()
        return token

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._grammar, token)

    def close(self) -> None:
        if getattr(self, "_grammar", None) is not None:
            self._lib.llama_sampler_free(self._grammar)
            self._grammar = None


class BuiltinConstraint(_GrammarConstraint):
    """The grammar over the whole vocabulary before every token (llama-cpp-python's ``grammar=``)."""

    name = "builtin"

    def choose(self, sampler: TokenSampler) -> int:
        self.tokens += 1
        return self._full_pass(sampler)


class LazyConstraint(_GrammarConstraint):
    """Sample first, check that one token, run the whole-vocabulary pass only on rejection."""

    name = "lazy"

    def choose(self, sampler: TokenSampler) -> int:
        self.tokens += 1
        token = sampler.first_choice()
        if self.allows(token):
            return token
        return self._full_pass(sampler)


# ------------------------------------------------------------------------------------- llguidance


class ModelTables:
    """Per-model llguidance setup: its tokenizer, the end-of-generation token set and each
    token's length in bytes."""

    def __init__(
        self, tokenizer: Any, eog: frozenset[int], n_vocab: int, seconds: float, lengths: list[int]
    ) -> None:
        self.tokenizer = tokenizer
        self.eog = eog
        self.n_vocab = n_vocab
        self.seconds = seconds
        self.lengths = lengths


_TABLES: weakref.WeakKeyDictionary[Any, ModelTables] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def _import_llguidance() -> Any:
    try:
        import llguidance
    except ImportError as exc:
        raise BackendMissingError(
            f"the llguidance engine needs the PyPI package llguidance ({exc}); "
            "`pip install llguidance==1.9.1`, or choose the 'lazy' engine"
        ) from None
    return llguidance


def _token_bytes(lib: Any, vocab: Any, n_vocab: int) -> tuple[list[bytes], list[int]]:
    """Each token's bytes as llama.cpp's grammar sees them (its piece with special tokens
    rendered), and the end-of-generation tokens.

    llguidance treats a token whose bytes start with 0xFF as special: never text. That is what the
    end-of-generation tokens become (the grammar lets them through only when it is complete, which
    llguidance does for its EOS tokens), the other control tokens (never part of constrained
    output: ``decode.control_tokens``), and the tokens llama.cpp's grammar always rejects (empty
    piece, or a piece starting with a NUL byte).
    """
    size = 256
    buf = ctypes.create_string_buffer(size)
    to_piece = lib.llama_token_to_piece
    is_eog = lib.llama_vocab_is_eog
    attr, control = lib.llama_vocab_get_attr, lib.LLAMA_TOKEN_ATTR_CONTROL
    tokens: list[bytes] = []
    eog: list[int] = []
    for token in range(n_vocab):
        n = to_piece(vocab, token, buf, size, 0, True)
        if n < 0:
            if -n > 1 << 20:
                raise GenerationError(f"token {token} has an implausible piece length {-n}")
            size = -n + 1
            buf = ctypes.create_string_buffer(size)
            n = to_piece(vocab, token, buf, size, 0, True)
        piece = buf.raw[:n]
        if is_eog(vocab, token):
            eog.append(token)
            piece = b"\xff" + (piece or b"<eog>")
        elif not piece or piece[0] == 0 or attr(vocab, token) & control:
            piece = b"\xff" + (piece or b"<never>")
        tokens.append(piece)
    return tokens, eog


def model_tables(llama: Any) -> ModelTables:
    """llguidance's tokenizer for this loaded model, built once (about 2 s at a 262k vocabulary)
    and cached until the ``Llama`` object is collected or ``forget_model`` is called."""
    if getattr(llama._model, "model", None) is None:
        raise GenerationError("the model was closed; load it again")
    with _TABLES_LOCK:
        tables = _TABLES.get(llama)
        if tables is not None:
            return tables
        llguidance = _import_llguidance()
        lib = import_llama_cpp()
        vocab = llama._model.vocab
        n_vocab = int(lib.llama_vocab_n_tokens(vocab))
        started = time.perf_counter()
        tokens, eog = _token_bytes(lib, vocab, n_vocab)
        if not eog:
            eog = [int(lib.llama_vocab_eos(vocab))]
        tokenize = ctypes.cast(lib.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
        tokenizer = llguidance.LLTokenizer.from_llamacpp(
            tokens=tokens, vocab_ptr=vocab, tokenize_fptr=tokenize, eos_token=eog, slices=None
        )
        lengths = [len(piece) for piece in tokens]
        tables = ModelTables(tokenizer, frozenset(eog), n_vocab, time.perf_counter() - started, lengths)
        _TABLES[llama] = tables
        log.info("llguidance tables for a %d-token vocabulary built in %.2f s", n_vocab, tables.seconds)
        return tables


def forget_model(llama: Any) -> None:
    """Drop the cached per-model tables; call before closing the model (they point into its
    vocabulary)."""
    with _TABLES_LOCK:
        _TABLES.pop(llama, None)


def clear_cache() -> None:
    with _TABLES_LOCK:
        _TABLES.clear()


# llama-cpp-python's converter writes a bounded repetition as nested optionals, ``x (x (x)?)?``;
# that nests deeper than llguidance's Lark reader allows (and Python's recursion limit in
# llguidance's converter), so it is folded back into ``(x){0,n}``, the same language.
_ATOM = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]')
_OPTIONAL = re.compile(r"\(([^()]+)\)\?")
_NESTED = re.compile(r"\(([^()|\n]+?) \(\1\)\{0,(\d+)\}\)\?")
_HIDDEN = re.compile("\x00(\\d+)\x00")
LARK_HEADER = '%llguidance {"no_forcing": true}'


def fold_repetitions(gbnf: str) -> str:
    """Rewrite nested optionals ``(x (x (x)?)?)?`` as ``(x){0,3}`` (string literals and character
    classes are left untouched)."""
    table: dict[str, str] = {}
    atoms: list[str] = []

    def hide(match: re.Match[str]) -> str:
        atom = match.group(0)
        if atom not in table:
            table[atom] = f"\x00{len(atoms)}\x00"
            atoms.append(atom)
        return table[atom]

    text = _ATOM.sub(hide, gbnf)
    text = _OPTIONAL.sub(lambda m: f"({m.group(1)}){{0,1}}", text)
    while True:
        text, n = _NESTED.subn(lambda m: f"({m.group(1)}){{0,{int(m.group(2)) + 1}}}", text)
        if not n:
            break
    return _HIDDEN.sub(lambda m: atoms[int(m.group(1))], text)


@functools.lru_cache(maxsize=64)
def gbnf_to_lark(gbnf: str) -> str:
    """The GBNF grammar in llguidance's Lark dialect (``ValueError`` when it cannot be converted)."""
    _import_llguidance()
    from llguidance.gbnf_to_lark import gbnf_to_lark as convert

    try:
        lark = convert(fold_repetitions(gbnf))
    except (RecursionError, Exception) as exc:  # noqa: BLE001 - the converter raises bare Exceptions
        raise ValueError(f"llguidance cannot convert the grammar: {exc}") from None
    # No forcing: by default llguidance narrows the mask to one token wherever the grammar forces
    # bytes (its canonical tokenization of them); llama.cpp's grammar allows every token that fits.
    header, sep, body = lark.partition("\n")
    if header.strip() != "%llguidance {}":
        raise ValueError(f"unexpected llguidance header {header!r}")
    return LARK_HEADER + sep + body


class LLGuidanceConstraint(Constraint):
    """llguidance's matcher: check the sampled token, compute the full mask only on rejection."""

    name = "llguidance"

    def __init__(self, llama: Any, gbnf: str) -> None:
        super().__init__()
        import numpy as np

        llguidance = _import_llguidance()
        tables = model_tables(llama)
        self._np = np
        self._eog = tables.eog
        self._n = tables.n_vocab
        self._lengths = tables.lengths
        self.spellings = Spellings()
        self._last: Before = (None, None)  # the last two tokens accepted
        self.matcher = llguidance.LLMatcher(tables.tokenizer, gbnf_to_lark(gbnf), log_level=0)
        if self.matcher.is_error():
            raise ValueError(f"llguidance rejected the grammar: {self.matcher.get_error()}")
        self._mask = np.zeros((self._n + 31) // 32, dtype=np.int32)

    def allows(self, token: int) -> bool:
        if token in self._eog:
            return self.matcher.is_accepting()
        return self.matcher.validate_tokens([token]) == 1

    def choose(self, sampler: TokenSampler) -> int:
        self.tokens += 1
        token = sampler.first_choice()
        if self.allows(token):
            return token
        np = self._np
        self.full_passes += 1
        self.matcher.unsafe_compute_mask_ptr(self._mask.ctypes.data, self._mask.nbytes)
        if self.matcher.is_error():
            raise GenerationError(f"llguidance failed: {self.matcher.get_error()}")
        allowed = np.unpackbits(self._mask.view(np.uint8), count=self._n, bitorder="little").view(bool)
        sampler.fill()
        np.copyto(sampler.logits[: self._n], _NEG_INF, where=~allowed)
        if sampler.n_vocab > self._n:
            sampler.logits[self._n :] = _NEG_INF
        token = sampler.pick()
        if sampler.selected_logit() == _NEG_INF:
            raise self._no_token()
        return token

    def accept(self, token: int) -> None:
        if not self.matcher.consume_token(token):
            raise GenerationError(f"llguidance refused token {token}: {self.matcher.get_error()}")
        self.spellings.record(token, self._lengths[token])
        self._last = (self._last[1], token)

    def draft(self, limit: int) -> list[int]:
        """The tokens the grammar forces from here (a key, punctuation, the rest of an enum value),
        at most ``limit``, not consumed: the model's own spelling of these bytes where it wrote
        them before in this generation (``Spellings``; its last token may reach past them, as the
        model wrote it), else llguidance's canonical tokenization. An end-of-generation token
        ends the run (it is sampled as usual)."""
        if limit <= 0:
            return []
        # llguidance computes the forced tokens from the forced bytes it found last: ask for those
        # first (compute_ff_tokens alone answers [] in llguidance 1.9)
        forced = self.matcher.compute_ff_bytes()
        if not forced:
            return []
        self.spellings.watch(forced, self._last)
        spelled = self.spellings.get(forced, self._last)
        if spelled:
            valid = self.matcher.validate_tokens(spelled[:limit])
            if valid:
                return spelled[:valid]
        return self._ff_tokens(limit)

    def _ff_tokens(self, limit: int) -> list[int]:
        """llguidance's fast-forward tokens: the canonical tokenization of the forced bytes
        (``compute_ff_bytes`` must have been called in this state), at most ``limit``."""
        tokens: list[int] = []
        for t in self.matcher.compute_ff_tokens()[:limit]:
            if t in self._eog:
                break
            tokens.append(t)
        return tokens

    def forced(self, limit: int) -> list[int]:
        """The canonical forced tokens, consumed at once: taken without asking the model."""
        if limit <= 0 or not self.matcher.compute_ff_bytes():
            return []
        tokens = self._ff_tokens(limit)
        if tokens and not self.matcher.consume_tokens(tokens):  # cannot happen: they are forced
            raise GenerationError(f"llguidance refused its own forced tokens: {self.matcher.get_error()}")
        self.tokens += len(tokens)
        self.forced_tokens += len(tokens)
        return tokens


Before = tuple[int | None, int | None]  # the two tokens before a forced run, the last one second


class Spellings:
    """How the model spelled, in this generation, the bytes the grammar forced: the tokens it
    chose for each forced run, so that the next draft of the same bytes (the same key in the next
    panel, the same closing punctuation) is the model's own spelling and not llguidance's
    canonical one, which the model may write otherwise (``"`` + ``panel`` against ``"p`` +
    ``anel``) and so cut. Only a guess for exact jump-forward to verify: the output is chosen row
    by row either way.

    A spelling runs to the token that ends the run, or to the one that reaches past its end
    (``":`` where only ``"`` is forced, a space being allowed before ``:``): a model that wrote
    that token once tends to write it again, and a draft that stopped at the run's end would be
    cut there. Each spelling is kept under the run's bytes and under the two tokens before them,
    since a model spells the same bytes one way in one place and another way in another (``,`` +
    `` "`` after a quote, ``,"`` after a space); a draft prefers the spelling of its own place,
    and first of all the rest of a longer run the model is writing as it wrote it before (a draft
    cut short by its limit, the token after it sampled).

    ``watch(run, before)`` starts recording a run where a draft begins, ``before`` the two tokens
    before it; ``record(token, length)`` follows each kept token."""

    LIMIT = 4096  # spellings kept, the oldest dropped first

    def __init__(self) -> None:
        self._known: dict[tuple[Before | None, bytes], list[int]] = {}
        # run, the tokens before it, its tokens so far, bytes covered
        self._open: list[tuple[bytes, Before | None, list[int], int]] = []

    def get(self, run: bytes, before: Before | None = None) -> list[int] | None:
        """The model's spelling of ``run`` after the tokens ``before``: the rest of a longer run
        the model is writing as it wrote it before, else the spelling of ``run`` after
        ``before``, else of ``run`` anywhere."""
        for open_run, open_before, tokens, _ in self._open:
            known = self._known.get((open_before, open_run)) or self._known.get((None, open_run))
            if known is not None and len(tokens) < len(known) and known[: len(tokens)] == tokens:
                return known[len(tokens) :]
        return self._known.get((before, run)) or self._known.get((None, run))

    def watch(self, run: bytes, before: Before | None = None) -> None:
        if all(open_run != run for open_run, _, _, _ in self._open):
            self._open.append((run, before, [], 0))

    def record(self, token: int, length: int) -> None:
        if not self._open:
            return
        still: list[tuple[bytes, Before | None, list[int], int]] = []
        for run, before, tokens, covered in self._open:
            covered += length
            tokens.append(token)  # the last one: the token that ends the run or reaches past it
            if covered < len(run):
                still.append((run, before, tokens, covered))
                continue
            for key in {(None, run), (before, run)}:
                self._known.pop(key, None)
                self._known[key] = tokens
            while len(self._known) > self.LIMIT:
                del self._known[next(iter(self._known))]
        self._open = still


# ---------------------------------------------------------------------------------------- factory


def make_constraint(name: str, llama: Any, gbnf: str) -> Constraint:
    """A fresh constraint of engine ``name`` (one of ``ENGINES``) for one generation."""
    if name == "builtin":
        return BuiltinConstraint(llama, gbnf)
    if name == "lazy":
        return LazyConstraint(llama, gbnf)
    if name == "llguidance":
        try:
            return LLGuidanceConstraint(llama, gbnf)
        except (BackendMissingError, ValueError) as exc:
            log.warning("llguidance engine unavailable (%s); using the lazy engine", exc)
            return LazyConstraint(llama, gbnf)
    raise ValueError(f"unknown constraint engine {name!r}; valid: {', '.join(ENGINES)}")
