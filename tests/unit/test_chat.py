from __future__ import annotations

import pytest

from mangaka.errors import MessageError
from mangaka.llm.chat import normalize_messages, split_reasoning


def test_system_messages_are_merged_at_the_start():
    messages = [
        {"role": "user", "content": "chapter"},
        {"role": "system", "content": "You write manga."},
        {"role": "assistant", "content": "{}"},
        {"role": "system", "content": "JSON only."},
        {"role": "user", "content": "again"},
    ]
    out = normalize_messages(messages)
    assert out[0] == {"role": "system", "content": "You write manga.\n\nJSON only."}
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert [m["content"] for m in out[1:]] == ["chapter", "{}", "again"]


def test_no_system_message_is_left_alone():
    out = normalize_messages([{"role": "user", "content": "hi"}])
    assert out == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([], "no messages"),
        ([{"role": "tool", "content": "x"}], "role 'tool'"),
        ([{"role": "user", "content": ["a"]}], "list content"),
        ([{"role": "system", "content": "only system"}], "no user message"),
    ],
)
def test_bad_messages_are_named(messages, needle):
    with pytest.raises(MessageError, match=needle):
        normalize_messages(messages)


def test_reasoning_is_split_out():
    assert split_reasoning('<think>plan it</think>\n\n{"a": 1}') == ("plan it", '{"a": 1}', True)


def test_empty_think_block_is_tolerated():
    assert split_reasoning("<think>\n\n</think>\n\n{}") == ("", "{}", True)


def test_prefilled_think_tag():
    assert split_reasoning("plan\n</think>\nanswer", prefilled_open=True) == ("plan", "answer", True)


def test_reasoning_that_never_closes_is_reported():
    assert split_reasoning("still thinking...", prefilled_open=True) == ("still thinking...", "", False)


def test_plain_text_has_no_reasoning():
    assert split_reasoning("  hello ") == ("", "hello", True)
