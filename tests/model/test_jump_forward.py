"""Jump-forward decoding (the tokens a schema forces, evaluated in one batch), against one token
at a time, for each schema of the Screenwriter and two user schemas, on the tiny models (hybrid
qwen35moe, attention-only qwen3moe) and the embedded model, on a short prompt.

``exact`` (the default) verifies each forced token against the sampler's own choice from that
batch row and drops the rest at the first other choice, so it writes what one token at a time
writes: the same text, or, where a batch's floating-point sums flip a near tie, a text that first
differs at a token whose two candidates are within ``NEAR_TIE`` logits of each other in the
one-token-at-a-time run (the test measures that gap). ``canonical`` takes llguidance's
tokenization of the forced bytes unverified: valid, but the model's own tokens for the same bytes
are not always those (``"`` + ``appearance`` against ``"appearance``), so what follows can
differ; the test says where. Both count forced tokens as generated (usage, the budget, progress)
and save one decode step each."""

from __future__ import annotations

import dataclasses
import json
import logging

import jsonschema
import numpy as np
import pytest

import mangaka.llm.constrain as constrain
import mangaka.llm.decode as decoding
import mangaka.llm.inprocess as inprocess
from mangaka.errors import Cancelled
from mangaka.llm.base import PRESETS, CallContext
from mangaka.llm.constrain import Spellings, make_constraint
from mangaka.llm.decode import draft_limit
from mangaka.llm.grammar import schema_to_gbnf
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions
from mangaka.screenplay.schema import cast_call_schema, script_call_schema

log = logging.getLogger(__name__)

MESSAGES = [
    {"role": "system", "content": "You adapt novel chapters into manga. Reply with JSON only."},
    {
        "role": "user",
        "content": "Lin ran down the pier at dusk. 'Wait!' she shouted. Old Tan held out a hand.",
    },
]
USER_SCHEMAS = {
    "props": {
        "type": "object",
        "properties": {
            "mood": {"enum": ["calm", "tense", "joyful"]},
            "props": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
        },
        "required": ["mood", "props"],
        "additionalProperties": False,
    },
    "beats": {
        "type": "object",
        "properties": {
            "beats": {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "who": {"enum": ["lin", "tan"]},
                        "what": {"type": "string", "maxLength": 40},
                    },
                    "required": ["who", "what"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["beats"],
        "additionalProperties": False,
    },
}
SCHEMAS = {
    "cast": cast_call_schema(3),
    "script": script_call_schema(["lin", "tan"], 2, 2),
    **USER_SCHEMAS,
}


# Logit gap below which a batch's rounding may flip the greedy choice (measured on gemma-3-270m:
# 0.007 and 0.08 where its exact run first differed); a wrong verification differs by whole logits.
NEAR_TIE = 0.25
OPTIONS = LoadOptions(n_ctx=4096, n_threads=1)


@pytest.fixture(params=["qwen35moe", "qwen3moe", "smollm2"])
def model(request):
    return request.getfixturevalue(request.param)


def first_difference(a, b) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def run(model, mode, schema, monkeypatch, **options):
    """One greedy completion: its text, tokens, prompt tokens, forced tokens and progress steps."""
    seen = {}
    decode = inprocess.decode

    def recording(llama, tokens, start, **kw):
        result = decode(llama, tokens, start, **kw)
        seen.update(prompt=list(tokens), tokens=list(result.tokens))
        return result

    monkeypatch.setattr(inprocess, "decode", recording)
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=1, **options), jump_forward=mode)
    steps: list[int] = []
    done = llm.complete(
        MESSAGES,
        schema=schema,
        sampling=PRESETS["greedy"],
        max_tokens=3000,
        context=CallContext(on_progress=lambda n, _t: steps.append(n)),
    )
    assert done.finish_reason == "stop", (mode, done.text[-200:])
    assert steps and steps[-1] == done.usage.completion_tokens == len(seen["tokens"])
    assert done.usage.forced_tokens == llm.last_forced_tokens  # the call's Usage carries its forced share
    jsonschema.validate(json.loads(done.text), schema)
    return done.text, seen["tokens"], seen["prompt"], llm.last_forced_tokens, len(steps), llm


def logit_gap(llm, prompt, tokens, at, a, b) -> float:
    """|logit(a) - logit(b)| after ``prompt`` + ``tokens[:at]``, evaluated one token at a time."""
    import llama_cpp

    llama = llm.model.llama
    llama.reset()
    llama.eval(prompt)
    for t in tokens[:at]:
        llama.eval([t])
    logits = np.ctypeslib.as_array(
        llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1), shape=(llama.n_vocab(),)
    )
    llama.reset()
    return abs(float(logits[a]) - float(logits[b]))


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_exact_jump_forward_writes_what_one_token_at_a_time_writes(model, name, monkeypatch):
    schema = SCHEMAS[name]
    plain, plain_tokens, prompt, plain_forced, plain_steps = run(model, "off", schema, monkeypatch)[:5]
    text, tokens, _, forced, steps, llm = run(model, "exact", schema, monkeypatch)
    assert plain_forced == 0 and plain_steps == len(plain_tokens)
    assert forced > 0  # every schema here forces keys
    assert steps == len(tokens) - forced  # each kept forced token saved its own decode step
    # every kept forced token came in a verified draft, no longer than the memory can drop again
    drafts = llm.last_draft_sizes
    assert drafts and sum(drafts) >= forced and len(drafts) <= steps
    assert max(drafts) <= draft_limit(llm.model.llama)
    at = first_difference(plain_tokens, tokens)
    if at is None:
        assert text == plain and len(tokens) == len(plain_tokens)
        return
    gap = logit_gap(llm, prompt, plain_tokens, at, plain_tokens[at], tokens[at])
    log.warning("%s on %s: exact differs from one at a time at token %d (logit gap %.4f)",
                name, model.name, at, gap)  # fmt: skip
    assert gap < NEAR_TIE, (name, at, gap)


@pytest.mark.parametrize("name", ["script", "beats"])
def test_canonical_jump_forward_is_valid_and_says_where_it_differs(model, name, monkeypatch):
    schema = SCHEMAS[name]
    plain = run(model, "off", schema, monkeypatch)[0]
    text, tokens, _, forced, steps, _llm = run(model, "canonical", schema, monkeypatch)
    assert steps == len(tokens) - forced
    if text != plain:
        at = next(
            (i for i, (x, y) in enumerate(zip(plain, text, strict=False)) if x != y),
            min(len(plain), len(text)),
        )
        log.warning("%s on %s: canonical text differs at %d: %r vs %r", name, model.name, at,
                    plain[at - 20 : at + 20], text[at - 20 : at + 20])  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2])
def test_exact_jump_forward_samples_what_one_token_at_a_time_samples(model, seed, monkeypatch):
    """Seeded sampling (the Screenwriter's default preset): each verified row draws from the
    sampler as one token at a time would, so the same seed writes the same text (on a short
    prompt, where a batch's logits equal one token's bit for bit)."""
    sampling = dataclasses.replace(PRESETS["qwen3.5-instruct"], seed=seed)
    texts = {}
    for mode in ("off", "exact"):
        llm = LlamaCppLLM(model, OPTIONS, jump_forward=mode)
        done = llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=sampling, max_tokens=3000)
        texts[mode] = (done.text, llm.last_forced_tokens)
    assert texts["exact"][1] > 0
    assert texts["exact"][0] == texts["off"][0]


@pytest.mark.parametrize("rollback_tokens", [0, 8])
def test_a_hybrid_model_rolls_a_cut_draft_back(qwen35moe, rollback_tokens, monkeypatch):
    """Without recurrent-state snapshots (the default) a cut draft's rows are dropped by putting
    the state saved before the batch back and evaluating the kept tokens again; with snapshots,
    through them. Either way the text is one token at a time's, and drafts were cut. Drafts as
    long as a GPU verifies (the CPU's limit lifted), so that the checkpoint's go past the
    snapshots' count."""
    monkeypatch.setattr(decoding, "CPU_MAX_DRAFT", decoding.MAX_DRAFT)
    restored: list[int] = []
    restore = decoding.StateCheckpoint.restore

    def counting(self, tokens):
        restored.append(len(tokens))
        return restore(self, tokens)

    monkeypatch.setattr(decoding.StateCheckpoint, "restore", counting)
    plain = run(qwen35moe, "off", SCHEMAS["script"], monkeypatch, rollback_tokens=rollback_tokens)
    text, tokens, _, forced, steps, llm = run(
        qwen35moe, "exact", SCHEMAS["script"], monkeypatch, rollback_tokens=rollback_tokens
    )
    assert text == plain[0] and forced > 0 and steps == len(tokens) - forced
    drafts = llm.last_draft_sizes
    assert sum(drafts) > forced  # some drafts were cut: their rows were dropped again
    if rollback_tokens:
        assert restored == [] and max(drafts) <= rollback_tokens
    else:
        assert restored and max(drafts) > 8  # longer than the snapshots would allow


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe", "smollm2"])
def test_on_the_cpu_a_verify_batch_stays_under_the_tiled_kernels_eight_rows(arch, request, monkeypatch):
    """On the CPU a draft is at most ``CPU_MAX_DRAFT`` tokens (a batch of 7 rows: llama.cpp
    multiplies K-quant weights by 8 rows or more in a tiled kernel that costs as much at 8 rows
    as at 16); a forced run longer than that is verified in several batches (that each batch
    writes what one token at a time writes is the tests above). Fully offloaded to a GPU the
    limit is the memory's (a stand-in: the build's offload support and the load's
    ``n_gpu_layers`` are what decides)."""
    llm = LlamaCppLLM(request.getfixturevalue(arch), OPTIONS, jump_forward="exact")
    llama = llm.model.llama
    assert not decoding.on_gpu(llama) and draft_limit(llama) == decoding.CPU_MAX_DRAFT == 6
    llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=PRESETS["greedy"], max_tokens=3000)
    assert max(llm.last_draft_sizes) == decoding.CPU_MAX_DRAFT  # the keys' runs are longer
    monkeypatch.setattr(decoding, "CPU_MAX_DRAFT", decoding.MAX_DRAFT)
    llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=PRESETS["greedy"], max_tokens=3000)
    assert max(llm.last_draft_sizes) > 6
    monkeypatch.setattr(decoding, "CPU_MAX_DRAFT", 6)
    monkeypatch.setattr(decoding, "gpu_offload", lambda: True)
    layers = int(decoding.import_llama_cpp().llama_model_n_layer(llama.model))
    for n_gpu_layers, whole in ((0, False), (layers, False), (layers + 1, True), (-1, True)):
        monkeypatch.setattr(llama.model_params, "n_gpu_layers", n_gpu_layers)
        assert decoding.on_gpu(llama) is whole
        assert (draft_limit(llama) > 6) is whole


@pytest.mark.parametrize("mode", ["exact", "canonical"])
@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_the_budget_holds_with_forced_tokens(arch, mode, request):
    llm = LlamaCppLLM(request.getfixturevalue(arch), OPTIONS, jump_forward=mode)
    for budget in (1, 2, 5, 17, 40):
        done = llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=PRESETS["greedy"], max_tokens=budget)
        assert done.finish_reason == "length" and done.usage.completion_tokens == budget


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_cancel_between_batches_leaves_the_model_usable(arch, request):
    """Cancelled mid-way (a rollback may be pending in a hybrid memory); the next call writes what
    a fresh model writes."""
    model = request.getfixturevalue(arch)
    llm = LlamaCppLLM(model, OPTIONS)
    whole = llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=PRESETS["greedy"], max_tokens=3000).text
    for after in (3, 10, 30):
        seen = {"n": 0}
        with pytest.raises(Cancelled):
            llm.complete(
                MESSAGES,
                schema=SCHEMAS["script"],
                sampling=PRESETS["greedy"],
                max_tokens=3000,
                context=CallContext(
                    on_progress=lambda n, _t, seen=seen: seen.update(n=n),
                    cancel=lambda seen=seen, after=after: seen["n"] >= after,
                ),
            )
        assert after <= seen["n"] < after + draft_limit(llm.model.llama) + 1
        again = llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=PRESETS["greedy"], max_tokens=3000)
        assert again.text == whole


def _items_schema(key: str, values: list[str]) -> dict:
    """An array of at least two objects, each one ``key`` with one of ``values``."""
    properties = {key: {"enum": values}}
    item = {"type": "object", "properties": properties, "required": [key], "additionalProperties": False}
    return {"type": "array", "minItems": 2, "items": item}


def test_a_forced_run_is_drafted_as_the_model_last_spelled_it(smollm2):
    """Where the model wrote a forced run in other tokens than llguidance's canonical ones, the
    next draft of the same bytes (the same key in the next item) is the model's own spelling."""
    llm = LlamaCppLLM(smollm2, LoadOptions(n_ctx=512, n_threads=1))
    llama = llm.model.llama
    schema = _items_schema("speaker", ["lin", "tan"])

    def tokens(text: str) -> list[int]:
        return llama.tokenize(text.encode(), add_bos=False, special=False)

    with make_constraint("llguidance", llama, schema_to_gbnf(schema)) as constraint:
        for t in tokens("[{ "):
            constraint.accept(t)
        run = constraint.matcher.compute_ff_bytes()
        canonical = constraint.draft(16)
        assert run == b'"speaker"' and run.startswith(llama.detokenize(canonical))
        by_byte = [tokens(chr(b))[0] for b in run]  # the model writes it a byte at a time
        assert by_byte[: len(canonical)] != canonical
        for t in by_byte:
            constraint.accept(t)
        for t in tokens(': "lin"}, { '):
            constraint.accept(t)
        assert constraint.draft(16) == by_byte
        assert constraint.draft(4) == by_byte[:4]  # the limit holds


def test_a_token_that_reached_past_a_forced_run_is_drafted_again(smollm2):
    """Where ``"}`` is forced (the array may go on or end after it), llguidance drafts nothing (a
    longer token, ``"},`` or ``"}]``, may begin with those bytes); once the model wrote ``"},``
    across the run's end, the next draft of those bytes is ``"},``."""
    llm = LlamaCppLLM(smollm2, LoadOptions(n_ctx=512, n_threads=1))
    llama = llm.model.llama
    schema = _items_schema("who", ["lin", "tan", "mei"])

    def tokens(text: str) -> list[int]:
        return llama.tokenize(text.encode(), add_bos=False, special=False)

    (across,) = tokens('"},')
    with make_constraint("llguidance", llama, schema_to_gbnf(schema)) as constraint:
        for t in tokens('[{"who": "lin'):
            constraint.accept(t)
        assert constraint.matcher.compute_ff_bytes() == b'"}'
        assert constraint.draft(16) == []
        constraint.accept(across)
        for t in tokens(' {"who": "tan'):
            constraint.accept(t)
        assert constraint.draft(16) == [across]


@pytest.mark.parametrize("threads", [1, 2])
def test_the_models_own_spellings_cut_fewer_drafts(smollm2, threads, monkeypatch):
    """On a trained model, which writes many keys in other tokens than llguidance's but the same
    way each time, drafting its own spellings keeps more forced tokens and drops fewer rows than
    drafting the canonical ones, writing the same text."""
    runs = {}
    for spelled in (True, False):
        if not spelled:
            monkeypatch.setattr(constrain.Spellings, "get", lambda self, run, before=None: None)
        llm = LlamaCppLLM(smollm2, LoadOptions(n_ctx=4096, n_threads=threads), jump_forward="exact")
        done = llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=PRESETS["greedy"], max_tokens=400)
        dropped = sum(llm.last_draft_sizes) - llm.last_forced_tokens
        runs[spelled] = (done.text, llm.last_forced_tokens, dropped)
    log.warning("smollm2, %d threads: forced, dropped with spellings %s, canonical %s",
                threads, runs[True][1:], runs[False][1:])  # fmt: skip
    assert runs[True][0] == runs[False][0]
    assert runs[True][1] > runs[False][1] and runs[True][2] < runs[False][2]


def test_a_spelling_runs_to_the_token_that_ends_the_run_or_reaches_past_it():
    spellings = Spellings()
    spellings.watch(b'"who"')
    spellings.watch(b'"who"')  # one recording a run
    for token, length in ((1, 1), (2, 3)):
        spellings.record(token, length)
    assert spellings.get(b'"who"') is None  # four of its five bytes so far
    spellings.record(3, 2)  # `":` reaches past the run: the model writes it there again
    assert spellings.get(b'"who"') == [1, 2, 3]
    spellings.watch(b", ")
    spellings.record(4, 2)
    assert spellings.get(b", ") == [4]
    spellings.watch(b"x")
    spellings.record(5, 3)  # a first token past the run
    assert spellings.get(b"x") == [5]
    spellings.watch(b'"who"')
    for token in (6, 7, 8, 9, 10):
        spellings.record(token, 1)
    assert spellings.get(b'"who"') == [6, 7, 8, 9, 10]  # the latest spelling


def test_a_spelling_is_drafted_where_the_model_wrote_it():
    """The same bytes, spelled one way after one pair of tokens and another way after another: a
    draft takes the spelling of its own place, else the latest anywhere; and where the model is
    writing a longer run as it wrote it before (a draft cut short by its limit, then a sampled
    token), the rest of that run's spelling comes first."""
    spellings = Spellings()
    spellings.watch(b",", (7, 8))
    spellings.record(9, 2)  # `,"` after 7, 8
    spellings.watch(b",", (1, 2))
    spellings.record(10, 1)  # `,` after 1, 2
    assert spellings.get(b",", (7, 8)) == [9]
    assert spellings.get(b",", (1, 2)) == [10]
    assert spellings.get(b",", (3, 4)) == [10]  # a new place: the latest
    spellings.watch(b'er"', (5, 6))
    spellings.record(11, 3)
    assert spellings.get(b'er"', (5, 6)) == [11]
    spellings.watch(b'"speaker"', (5, 6))
    for token, length in ((20, 1), (21, 3), (22, 2), (23, 3)):
        spellings.record(token, length)
    spellings.watch(b'"speaker"', (5, 6))
    spellings.record(20, 1)
    spellings.record(21, 3)  # the draft's limit
    spellings.record(22, 2)  # sampled
    assert spellings.get(b'er"', (5, 6)) == [23]  # the rest of the longer run, not `er"` alone
    spellings.watch(b'er"', (5, 6))
    spellings.record(24, 1)  # written otherwise: the longer run's spelling no longer applies
    assert spellings.get(b'r"', (5, 6)) is None


def test_spellings_keep_the_latest_ones_up_to_their_limit():
    small = Spellings()
    small.LIMIT = 2
    for run in (b"a", b"b", b"c"):
        small.watch(run)
        small.record(1, 1)
    assert small.get(b"a") is None and small.get(b"b") == small.get(b"c") == [1]
