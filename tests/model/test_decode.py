"""Our decoding loop and the three constraint engines against llama-cpp-python's own paths."""

from __future__ import annotations

import ctypes
import json
import re

import jsonschema
import numpy as np
import pytest

from mangaka.errors import BackendMissingError
from mangaka.llm import constrain
from mangaka.llm.base import PRESETS, Sampling
from mangaka.llm.budget import json_token_budget
from mangaka.llm.constrain import (
    DEFAULT_ENGINE,
    ENGINES,
    LazyConstraint,
    LLGuidanceConstraint,
    fold_repetitions,
    forget_model,
    make_constraint,
    model_tables,
)
from mangaka.llm.decode import TokenSampler, control_tokens, decode
from mangaka.llm.grammar import schema_to_gbnf

llama_cpp = pytest.importorskip("llama_cpp")

GREEDY = PRESETS["greedy"]
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
PROMPT = "<|im_start|>user\nDescribe the next panel as JSON.<|im_end|>\n<|im_start|>assistant\n"

SCHEMAS: dict[str, dict] = {
    "strings": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z][a-z0-9_]{0,7}$"},
            "name": {"type": "string", "minLength": 1, "maxLength": 12},
            "note": {"type": "string", "maxLength": 10},
        },
        "required": ["id", "name", "note"],
        "additionalProperties": False,
    },
    "enums": {
        "type": "object",
        "properties": {
            "mood": {"type": "string", "enum": ["happy", "sad", "angry", "surprised"]},
            "shot": {"enum": ["wide", "close_up", "pov"]},
            "speaker": {"const": "narrator"},
        },
        "required": ["mood", "shot", "speaker"],
        "additionalProperties": False,
    },
    "arrays": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"tag": {"type": "string", "maxLength": 5}, "n": {"enum": [1, 2, 3]}},
            "required": ["tag", "n"],
            "additionalProperties": False,
        },
        "minItems": 1,
        "maxItems": 3,
    },
    "numbers": {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "ok": {"type": "boolean"},
            "none": {"type": "null"},
        },
        "required": ["count", "ratio", "ok", "none"],
        "additionalProperties": False,
    },
}


@pytest.fixture(scope="module")
def tiny_llamas(qwen35moe, qwen3moe):
    models = {
        arch: llama_cpp.Llama(str(path), n_ctx=2048, n_threads=1, n_threads_batch=1, verbose=False)
        for arch, path in (("qwen35moe", qwen35moe), ("qwen3moe", qwen3moe))
    }
    yield models
    for llama in models.values():
        forget_model(llama)
        llama.close()


def _prompt(llama) -> list[int]:
    return llama.tokenize(PROMPT.encode(), add_bos=False, special=True)


def _reference(llama, tokens: list[int], gbnf: str | None, n: int) -> tuple[list[int], str]:
    """llama-cpp-python's own greedy path (``grammar=`` when given a grammar)."""
    grammar = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False) if gbnf is not None else None
    llama.reset()
    out: list[int] = []
    for token in llama.generate(tokens, temp=0.0, repeat_penalty=1.0, grammar=grammar, reset=True):
        if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
            return out, "stop"
        out.append(token)
        if len(out) >= n:
            break
    return out, "length"


def _ours(llama, tokens, constraint, n, sampling: Sampling = GREEDY, on_token=None):
    llama.reset()
    return decode(llama, tokens, 0, sampling=sampling, constraint=constraint, budget=n, on_token=on_token)


def _text(llama, tokens: list[int]) -> str:
    return llama.detokenize(tokens).decode("utf-8")


def _grammar_allowed(llama, gbnf: str, consumed: list[int]) -> np.ndarray:
    """The tokens llama.cpp's grammar allows after ``consumed``, by a whole-vocabulary pass."""
    lazy = LazyConstraint(llama, gbnf)
    for token in consumed:
        lazy.accept(token)
    n = llama.n_vocab()
    data = (llama_cpp.llama_token_data * n)(*[llama_cpp.llama_token_data(i, 0.0, 0.0) for i in range(n)])
    array = llama_cpp.llama_token_data_array(
        data=ctypes.cast(data, llama_cpp.llama_token_data_p), size=n, selected=-1, sorted=False
    )
    llama_cpp.llama_sampler_apply(lazy._grammar, ctypes.byref(array))
    lazy.close()
    return np.array([data[i].logit != float("-inf") for i in range(n)])


def _llguidance_allowed(constraint: LLGuidanceConstraint, n: int) -> np.ndarray:
    mask = np.zeros((n + 31) // 32, dtype=np.int32)
    constraint.matcher.unsafe_compute_mask_ptr(mask.ctypes.data, mask.nbytes)
    return np.unpackbits(mask.view(np.uint8), count=n, bitorder="little").astype(bool)


# ---------------------------------------------------------------------------- equivalence


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_every_engine_matches_the_reference_grammar_path(tiny_llamas, arch, schema_name):
    llama = tiny_llamas[arch]
    schema = SCHEMAS[schema_name]
    gbnf = schema_to_gbnf(schema)
    tokens = _prompt(llama)
    budget = json_token_budget(schema)
    reference, ref_finish = _reference(llama, tokens, gbnf, budget)
    assert ref_finish == "stop"
    for engine in ENGINES:
        with make_constraint(engine, llama, gbnf) as constraint:
            assert constraint.name == engine
            result = _ours(llama, tokens, constraint, budget)
        assert result.tokens == reference, engine
        assert result.finish_reason == "stop"
        assert result.prompt_tokens_decoded == len(tokens)
        text = _text(llama, result.tokens)
        assert not CONTROL.search(text), text
        jsonschema.validate(json.loads(text), schema)


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
def test_llguidance_allows_exactly_what_the_llama_cpp_grammar_allows(tiny_llamas, schema_name):
    """At every step of an output, llguidance's token mask equals llama.cpp's grammar pass."""
    llama = tiny_llamas["qwen3moe"]
    gbnf = schema_to_gbnf(SCHEMAS[schema_name])
    tokens = _prompt(llama)
    reference, _ = _reference(llama, tokens, gbnf, json_token_budget(SCHEMAS[schema_name]))
    n = llama.n_vocab()
    # Bytes F5-FF never occur in UTF-8. llama.cpp's grammar reads them as the start of a 4-byte
    # character; llguidance never allows them. Control tokens (``<|im_start|>``) are text to
    # llama.cpp's grammar but never part of our constrained output (``decode.control_tokens``).
    # Those are the differences, and they are deliberate.
    not_utf8 = np.array([any(b >= 0xF5 for b in llama.detokenize([t], special=True)) for t in range(n)])
    not_utf8[control_tokens(llama)] = True
    constraint = make_constraint("llguidance", llama, gbnf)
    assert isinstance(constraint, LLGuidanceConstraint)
    for step in range(len(reference) + 1):
        expected = _grammar_allowed(llama, gbnf, reference[:step]) & ~not_utf8
        got = _llguidance_allowed(constraint, n)
        differ = [(int(t), llama.detokenize([int(t)], special=True)) for t in np.nonzero(expected != got)[0]]
        assert not differ, f"step {step}: {differ}"
        if step < len(reference):
            constraint.accept(reference[step])
    constraint.close()


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_free_decoding_matches_the_library(tiny_llamas, arch):
    llama = tiny_llamas[arch]
    tokens = _prompt(llama)
    reference, _ = _reference(llama, tokens, None, 24)
    result = _ours(llama, tokens, None, 24)
    assert result.tokens == reference
    assert result.finish_reason == ("length" if len(reference) == 24 else "stop")


def test_sampled_decoding_is_valid_and_repeatable_per_seed(tiny_llamas):
    llama = tiny_llamas["qwen35moe"]
    schema = SCHEMAS["strings"]
    gbnf = schema_to_gbnf(schema)
    tokens = _prompt(llama)
    sampling = PRESETS["qwen3.5-instruct"].replace(seed=7, repeat_penalty=1.1)
    budget = json_token_budget(schema)
    for engine in ENGINES:
        outputs = []
        for _ in range(2):
            with make_constraint(engine, llama, gbnf) as constraint:
                result = _ours(llama, tokens, constraint, budget, sampling=sampling)
            assert result.finish_reason == "stop"
            jsonschema.validate(json.loads(_text(llama, result.tokens)), schema)
            outputs.append(result.tokens)
        assert outputs[0] == outputs[1], engine


# ---------------------------------------------------------------------------- stopping


def test_on_token_cancels(tiny_llamas):
    llama = tiny_llamas["qwen3moe"]
    seen: list[int] = []

    def on_token(n: int) -> bool:
        seen.append(n)
        return n == 3

    with make_constraint(DEFAULT_ENGINE, llama, schema_to_gbnf(SCHEMAS["strings"])) as constraint:
        result = _ours(llama, _prompt(llama), constraint, 100, on_token=on_token)
    assert result.finish_reason == "cancelled"
    assert len(result.tokens) == 3
    assert seen == [1, 2, 3]


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_budget_stops_with_length_and_the_context_stays_consistent(tiny_llamas, arch):
    llama = tiny_llamas[arch]
    tokens = _prompt(llama)
    result = _ours(llama, tokens, None, 5)
    assert result.finish_reason == "length"
    assert len(result.tokens) == 5
    # Every kept token but the last was evaluated, and the library's bookkeeping says so.
    assert llama.n_tokens == len(tokens) + 4
    assert llama._input_ids.tolist() == tokens + result.tokens[:4]


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_resuming_from_the_context_continues_the_same_output(tiny_llamas, arch):
    llama = tiny_llamas[arch]
    tokens = _prompt(llama)
    whole = _ours(llama, tokens, None, 16).tokens
    first = _ours(llama, tokens, None, 8).tokens
    assert first == whole[:8]
    resumed = tokens + first
    second = decode(llama, resumed, llama.n_tokens, sampling=GREEDY, constraint=None, budget=8)
    assert second.prompt_tokens_decoded == 1
    assert first + second.tokens == whole


def test_a_fully_cached_prompt_re_evaluates_its_last_token(tiny_llamas):
    llama = tiny_llamas["qwen3moe"]  # attention only: one position can be dropped
    tokens = _prompt(llama)
    expected = _ours(llama, tokens, None, 6).tokens
    llama.reset()
    llama.eval(tokens)
    result = decode(llama, tokens, len(tokens), sampling=GREEDY, constraint=None, budget=6)
    assert result.prompt_tokens_decoded == 1
    assert result.tokens == expected


def test_a_fully_cached_prompt_on_a_hybrid_model_needs_one_token_left(tiny_llamas):
    llama = tiny_llamas["qwen35moe"]
    tokens = _prompt(llama)
    llama.reset()
    llama.eval(tokens)
    with pytest.raises(ValueError, match="start < len"):
        decode(llama, tokens, len(tokens), sampling=GREEDY, constraint=None, budget=4)


def test_the_context_must_hold_the_prompt_prefix(tiny_llamas):
    llama = tiny_llamas["qwen3moe"]
    tokens = _prompt(llama)
    llama.reset()
    with pytest.raises(ValueError, match="holds 0 tokens"):
        decode(llama, tokens, 3, sampling=GREEDY, constraint=None, budget=4)
    llama.eval([tokens[0] + 1, *tokens[1:3]])
    with pytest.raises(ValueError, match="differ"):
        decode(llama, tokens, 3, sampling=GREEDY, constraint=None, budget=4)


# ---------------------------------------------------------------------------- engines


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_control_tokens_are_the_non_ending_control_tokens(tiny_llamas, arch):
    llama = tiny_llamas[arch]
    found = set(control_tokens(llama).tolist())
    start = llama.tokenize(b"<|im_start|>", add_bos=False, special=True)
    end = llama.tokenize(b"<|im_end|>", add_bos=False, special=True)
    assert len(start) == 1 and start[0] in found
    assert len(end) == 1 and end[0] not in found  # ends generation: the grammar decides when
    assert not found & set(llama.tokenize(b"hello world", add_bos=False))


def test_constrained_output_never_holds_a_control_token(tiny_llamas, monkeypatch):
    """A control token is text to llama.cpp's grammar (``<|im_start|>`` counts as 12 characters)
    but the reply's text drops it: banned for every engine, even when it is the model's top
    choice, so the reply is what the grammar checked."""
    llama = tiny_llamas["qwen35moe"]
    schema = {
        "type": "object",
        "properties": {"story": {"type": "string", "minLength": 40, "maxLength": 60}},
        "required": ["story"],
        "additionalProperties": False,
    }
    gbnf = schema_to_gbnf(schema)
    tokens = _prompt(llama)
    banned = control_tokens(llama)
    real = TokenSampler._last_logits

    def control_favoured(self):
        logits = np.array(real(self))
        logits[banned] = 1e4  # every control token now beats every other token
        return logits

    monkeypatch.setattr(TokenSampler, "_last_logits", control_favoured)
    for engine in ENGINES:
        with make_constraint(engine, llama, gbnf) as constraint:
            result = _ours(llama, tokens, constraint, json_token_budget(schema))
        assert result.finish_reason == "stop", engine
        assert not set(result.tokens) & set(banned.tolist()), engine
        story = json.loads(_text(llama, result.tokens))["story"]
        assert 40 <= len(story) <= 60, (engine, story)


def test_unknown_engine_names_the_valid_ones(tiny_llamas):
    with pytest.raises(ValueError, match="llguidance, lazy, builtin"):
        make_constraint("fast", tiny_llamas["qwen3moe"], schema_to_gbnf(SCHEMAS["enums"]))


def test_llguidance_missing_falls_back_to_lazy(tiny_llamas, monkeypatch, caplog):
    def missing():
        raise BackendMissingError("llguidance is not installed")

    monkeypatch.setattr(constrain, "_import_llguidance", missing)
    constraint = make_constraint("llguidance", tiny_llamas["qwen3moe"], schema_to_gbnf(SCHEMAS["enums"]))
    assert isinstance(constraint, LazyConstraint)
    assert "using the lazy engine" in caplog.text
    constraint.close()


def test_llguidance_tables_are_built_once_per_model(tiny_llamas):
    llama = tiny_llamas["qwen3moe"]
    tables = model_tables(llama)
    assert model_tables(llama) is tables
    assert tables.n_vocab == llama.n_vocab()
    vocab = llama._model.vocab
    assert tables.eog == {i for i in range(llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, i)}
    forget_model(llama)
    assert model_tables(llama) is not tables


def test_fold_repetitions_keeps_the_language_and_leaves_literals_alone():
    assert fold_repetitions('a ::= "x" (c (c (c)?)?)?') == 'a ::= "x" (c){0,3}'
    assert fold_repetitions('a ::= c (c (c)?)? "(c)?"') == 'a ::= c (c){0,2} "(c)?"'
    assert fold_repetitions(r'a ::= ("," s i ("," s i)?)? [(]') == r'a ::= ("," s i){0,2} [(]'
    # Alternation binds looser than a sequence: this is not a repetition of "a | b".
    assert fold_repetitions("a ::= (a | b (a | b)?)?") == "a ::= (a | b (a | b){0,1})?"
    deep = "r ::= " + "(x " * 300 + "(x)?" + ")?" * 300
    assert fold_repetitions(deep) == "r ::= (x){0,301}"


def test_lazy_engine_rarely_needs_the_full_pass_on_a_trained_model(smollm2):
    """SmolLM2 mostly writes valid JSON by itself: the sampled token is usually accepted."""
    llama = llama_cpp.Llama(str(smollm2), n_ctx=1024, n_threads=1, n_threads_batch=1, verbose=False)
    try:
        from mangaka.screenplay.schema import cast_call_schema

        schema = cast_call_schema(2)
        gbnf = schema_to_gbnf(schema)
        prompt = (
            "<|im_start|>system\nYou reply with JSON only.<|im_end|>\n<|im_start|>user\n"
            "List two characters of a detective story: id, name, appearance.<|im_end|>\n"
            "<|im_start|>assistant\n"
        )
        tokens = llama.tokenize(prompt.encode(), add_bos=False, special=True)
        reference, _ = _reference(llama, tokens, gbnf, 120)
        for engine in ("lazy", "llguidance"):
            with make_constraint(engine, llama, gbnf) as constraint:
                result = _ours(llama, tokens, constraint, 120)
                assert result.tokens == reference, engine
                assert constraint.tokens >= len(result.tokens) >= 40
                assert constraint.full_passes * 4 < constraint.tokens, engine
        with make_constraint("builtin", llama, gbnf) as constraint:
            _ours(llama, tokens, constraint, 120)
            assert constraint.full_passes == constraint.tokens
    finally:
        forget_model(llama)
        llama.close()
