"""JSON an adversarial user or a looping model gives the engine (issue 19, items 1 to 4), each from
the input that broke it: validators that disagreed, deep nesting, quadratic extraction, and prose
with ``{}`` before the screenplay."""

from __future__ import annotations

import json

import pytest

from mangaka.batch.workflow import load_workflow
from mangaka.compose import extract_json_object, screenplay_from_text
from mangaka.errors import InputError, MangakaError
from mangaka.jsontext import MAX_DEPTH, exceeds_depth
from mangaka.screenplay import example_screenplay
from mangaka.screenplay.bible import parse_series_bible
from mangaka.screenplay.validate import load_screenplay, validate_screenplay
from mangaka.structured import _ecma_anchors, parse_json
from tests.growth import assert_linear

SCREENPLAY = json.dumps(example_screenplay(), indent=2)
DEEP = "[" * 1000 + "]" * 1000  # the issue's ~1,000 levels


# ------------------------------------------------------------------ 1. the validators agree


def _renamed(old: str, new: str) -> dict:
    return json.loads(json.dumps(example_screenplay()).replace(f'"{old}"', json.dumps(new)))


def test_an_id_with_a_final_line_break_fails_the_schema_as_it_fails_the_model():
    data = _renamed("akira", "akira\n")  # every reference renamed too: only the pattern can object
    problems = validate_screenplay(data)
    assert problems and all("does not match" in p for p in problems)
    assert problems[0].startswith("characters[0].id: ")
    with pytest.raises(InputError, match=r"characters\[0\]\.id: 'akira\\n' does not match"):
        load_screenplay(json.dumps(data), repair=False)
    assert load_screenplay(json.dumps(data)).characters[0].id == "akira"  # the repair trims it


def test_the_pattern_reads_dollar_as_the_end_of_the_string_only_outside_classes():
    assert _ecma_anchors(r"^[a-z]+$") == r"^[a-z]+\Z"
    assert _ecma_anchors(r"^[$]\$x$") == r"^[$]\$x\Z"


@pytest.mark.parametrize(
    "load",
    [lambda t: load_screenplay(t), lambda t: screenplay_from_text("Here:\n" + t)],
    ids=["page / load", "parse node"],
)
def test_a_lone_surrogate_is_an_input_error_naming_the_field_not_a_pydantic_traceback(load):
    text = SCREENPLAY.replace("Did we miss it?", "Did we miss it? \\ud800")
    with pytest.raises(InputError, match=r"dialogue\[1\]\.line: holds a lone surrogate \(\\ud800\)"):
        load(text)


# ------------------------------------------------------------------ 2. deep nesting


@pytest.mark.parametrize(
    "load",
    [
        lambda: load_screenplay(DEEP),
        lambda: load_screenplay('{"characters": ' + DEEP + "}"),
        lambda: extract_json_object('{"a": ' + DEEP + "}"),
        lambda: screenplay_from_text("Here: " + '{"panels": ' + DEEP + "}"),
        lambda: parse_series_bible('{"version": 1, "characters": ' + DEEP + "}"),
    ],
    ids=["screenplay", "screenplay field", "extraction", "parse node", "bible"],
)
def test_deep_nesting_is_an_input_error_naming_the_limit(load):
    with pytest.raises(InputError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load()


def test_a_deeply_nested_workflow_file_is_an_input_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"1": ' + DEEP + "}", encoding="utf-8")
    with pytest.raises(InputError, match=r"workflow file .*deep\.json: the JSON is nested more than"):
        load_workflow(path)


def test_a_deeply_nested_model_reply_is_a_problem_fed_back_not_a_crash():
    data, problems = parse_json('{"a": ' + DEEP + "}")
    assert data is None and "nested more than" in problems[0]


def test_the_depth_limit_counts_brackets_not_brackets_inside_strings():
    assert not exceeds_depth(json.dumps({"line": "[" * 5000}))
    assert not exceeds_depth("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert exceeds_depth("[" * (MAX_DEPTH + 1))


# ------------------------------------------------------------------ 3. linear extraction


def _fails(text: str) -> None:
    with pytest.raises(MangakaError):
        extract_json_object(text)


@pytest.mark.parametrize(
    "make",
    [lambda n: "x " + "<think>" * (n // 7), lambda n: "{" * n, lambda n: '{"a" x}' * (n // 7)],
    ids=["unclosed think blocks", "open braces", "broken objects"],
)
def test_extraction_time_grows_linearly(make):
    """8x the text costs about 8x the CPU time, quadratic would be 64x (tests/growth.py). The
    issue's inputs took 10 s for 140 KB of <think> and 27 s for 400,000 braces."""
    texts = {n: make(n) for n in (12_500, 100_000)}
    assert_linear(lambda n: _fails(texts[n]), 100_000, slack=0.05)


# ------------------------------------------------------------------ 4. the complete screenplay wins


def test_prose_with_empty_braces_before_the_screenplay_finds_the_screenplay():
    text = "Empty props are [] and nothing else is {}.\n" + SCREENPLAY
    assert screenplay_from_text(text).title == "The Last Train"


def test_a_small_example_object_after_the_screenplay_is_passed_over():
    text = SCREENPLAY + '\nEach line looks like {"id": "d1", "speaker": "narrator"}.'
    assert extract_json_object(text)["title"] == "The Last Train"


def test_a_fenced_object_wins_over_a_larger_one_in_the_prose():
    prose = json.dumps({"schema": "x" * 2000})
    text = f"The schema was {prose}.\n```json\n{SCREENPLAY}\n```"
    assert extract_json_object(text)["title"] == "The Last Train"


def test_a_cut_off_screenplay_after_prose_braces_is_reported_as_cut_off():
    with pytest.raises(InputError, match=r"starts at character 8 does not parse.*cut off"):
        extract_json_object("Note {}\n" + SCREENPLAY[:300])


def test_an_object_inside_prose_braces_is_found():
    assert extract_json_object('{ the answer: {"a": 1} }') == {"a": 1}


def test_a_whole_json_object_is_taken_whatever_its_strings_hold():
    """A screenplay file whose strings hold ``</think>`` or ``<think>`` (a random model's title) is
    that screenplay, not reasoning to drop."""
    import json as _json

    from mangaka.compose.extract import extract_json_object
    from mangaka.screenplay import example_screenplay

    data = example_screenplay()
    data["title"] = "<think>a</think> b"
    text = _json.dumps(data, ensure_ascii=False, indent=2)
    assert extract_json_object(text) == data
