"""What the OpenAI-compatible backend sends to each kind of server (ARCHITECTURE.md's table)."""

from __future__ import annotations

import json

import pytest

from mangaka.errors import InputError
from mangaka.llm.base import PRESETS
from mangaka.llm.openai import OpenAICompatibleLLM, escape_control_characters, request_body

SCHEMA = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]}
MESSAGES = [{"role": "user", "content": "hi"}, {"role": "system", "content": "be brief"}]


def body(flavor: str, **kw):
    return request_body(
        flavor, "qwen", MESSAGES, schema=kw.get("schema", SCHEMA), sampling=PRESETS["qwen3.5-instruct"],
        max_tokens=64, thinking=kw.get("thinking", False),
    )  # fmt: skip


def test_vllm_gets_a_named_json_schema_the_thinking_switch_and_its_penalty_name():
    b = body("vllm")
    assert b["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA, "strict": True},
    }
    assert b["chat_template_kwargs"] == {"enable_thinking": False}
    assert b["repetition_penalty"] == 1.0 and "repeat_penalty" not in b
    assert b["top_k"] == 20 and b["stream"] is True


def test_llama_server_gets_json_schema_and_the_thinking_switch():
    b = body("llama-server", thinking=True)
    assert b["response_format"] == {"type": "json_schema", "json_schema": {"schema": SCHEMA}}
    assert b["chat_template_kwargs"] == {"enable_thinking": True}
    assert b["repeat_penalty"] == 1.0


def test_llama_cpp_python_server_gets_json_object_with_schema_and_no_per_request_switch():
    b = body("llama-cpp-python")
    assert b["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "chat_template_kwargs" not in b and "stream_options" not in b


def test_plain_openai_gets_only_standard_fields():
    b = body("openai")
    assert "top_k" not in b and "min_p" not in b and "chat_template_kwargs" not in b
    assert b["response_format"]["type"] == "json_schema"


def test_system_messages_are_merged_first_and_no_schema_means_no_response_format():
    b = body("llama-server", schema=None)
    assert b["messages"][0]["role"] == "system" and "response_format" not in b


def test_raw_control_characters_in_strings_are_escaped_and_kept():
    text, n = escape_control_characters('{"a": "x\ny\x1b", "b": "q\\"\t"}')
    assert n == 3 and json.loads(text) == {"a": "x\ny\x1b", "b": 'q"\t'}
    assert escape_control_characters('{\n "a": 1\n}') == ('{\n "a": 1\n}', 0)  # outside strings: untouched


def test_bad_options_are_refused():
    with pytest.raises(InputError, match="http"):
        OpenAICompatibleLLM("127.0.0.1:8080")
    with pytest.raises(InputError, match="flavor"):
        OpenAICompatibleLLM("http://x", flavor="tgi")
    assert OpenAICompatibleLLM("http://x:8080/v1/").base_url == "http://x:8080"


def test_llama_server_gets_closed_tuples_without_items_false():
    tuple_schema = {"type": "array", "prefixItems": [{"const": "p1"}, {"const": "p2"}], "items": False}
    b = request_body(
        "llama-server", "", MESSAGES, schema={"type": "object", "properties": {"panels": tuple_schema}},
        sampling=PRESETS["greedy"], max_tokens=8, thinking=False,
    )  # fmt: skip
    sent = b["response_format"]["json_schema"]["schema"]["properties"]["panels"]
    assert (
        "items" not in sent and sent["maxItems"] == 2 and sent["prefixItems"] == tuple_schema["prefixItems"]
    )
    assert tuple_schema["items"] is False  # the caller's schema is untouched
