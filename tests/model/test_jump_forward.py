"""Jump-forward decoding (the tokens a schema forces, decoded in one batch), against one token at
a time, for each schema of the Screenwriter and two user schemas, on the tiny models and the
embedded model: both are valid under the schema; the forced tokens count as generated (usage,
the budget, progress) and save one decode step each; where the two differ, the test says where.

They can differ: the forced tokens are llguidance's canonical tokenization of the forced bytes,
and a model's own tokens for the same bytes are not always those (``"`` + ``appearance`` against
``"appearance``), so the greedy continuation sees another context. That is why jump-forward is off
by default (README)."""

from __future__ import annotations

import json
import logging

import jsonschema
import pytest

from mangaka.llm.base import PRESETS
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


@pytest.fixture(params=["qwen35moe", "qwen3moe", "smollm2"])
def model(request):
    return request.getfixturevalue(request.param)


def first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_jump_forward_writes_the_same_json_as_one_token_at_a_time(model, name):
    schema = SCHEMAS[name]
    outputs = {}
    outputs_tokens: dict[bool, int] = {}
    for jump in (False, True):
        llm = LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=1), jump_forward=jump)
        steps: list[int] = []
        done = llm.complete(
            MESSAGES,
            schema=schema,
            sampling=PRESETS["greedy"],
            max_tokens=3000,
            on_progress=lambda n, _t, steps=steps: steps.append(n),
        )
        assert done.finish_reason == "stop", (name, jump, done.text[-200:])
        assert steps and steps[-1] == done.usage.completion_tokens  # forced tokens counted as generated
        outputs[jump] = (done.text, json.loads(done.text), llm.last_forced_tokens, len(steps))
        outputs_tokens[jump] = done.usage.completion_tokens
    (plain, plain_json, plain_forced, _), (jumped, jumped_json, forced, jump_steps) = (
        outputs[False],
        outputs[True],
    )
    assert plain_forced == 0
    if jumped != plain:  # a forced run tokenised otherwise: say where; the values must still agree
        at = first_difference(plain, jumped)
        log.warning(
            "%s: raw text differs at %d: %r vs %r",
            name,
            at,
            plain[at - 20 : at + 20],
            jumped[at - 20 : at + 20],
        )
    for value in (plain_json, jumped_json):
        jsonschema.validate(value, schema)
    # every forced token is generated without a decode step of its own
    assert jump_steps == outputs_tokens[True] - forced, (forced, jump_steps, outputs_tokens)
    log.warning(
        "%s: %d of %d tokens forced; same JSON: %s",
        name,
        forced,
        outputs_tokens[True],
        jumped_json == plain_json,
    )


def test_the_budget_holds_with_forced_tokens(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, LoadOptions(n_ctx=4096, n_threads=1), jump_forward=True)
    for budget in (1, 2, 5, 17):
        done = llm.complete(MESSAGES, schema=SCHEMAS["script"], sampling=PRESETS["greedy"], max_tokens=budget)
        assert done.finish_reason == "length" and done.usage.completion_tokens == budget
