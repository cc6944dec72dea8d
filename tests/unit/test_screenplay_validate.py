from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from mangaka.errors import InputError
from mangaka.screenplay import Screenplay, load_screenplay, validate_screenplay
from mangaka.screenplay.example import example_screenplay as example

Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = data
        for p in parents:
            node = node[p]
        node[last] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_set("characters.1.id", "akira"), "characters[1].id: 'akira' is already the id of characters[0]"),
        (_set("characters.1.id", "narrator"), "characters[1].id: 'narrator' is reserved"),
        (_set("characters.1.name", "   "), "characters[1].name: is blank"),
        (
            _set("characters.1.name", " akira "),
            "characters[1].name: ' akira ' is already the name of characters[0]",
        ),
        (_set("dialogue.2.id", "d2"), "dialogue[2].id: 'd2' is already the id of dialogue[1]"),
        (_set("dialogue.1.speaker", "kenji"), "dialogue[1].speaker: 'kenji' is not one of the characters"),
        (_set("dialogue.1.line", " \n"), "dialogue[1].line: is blank"),
        (_set("panels.1.id", "p1"), "panels[1].id: 'p1' is already the id of panels[0]"),
        (
            _set("panels.1.characters", ["akira", "kenji"]),
            "panels[1].characters[1]: 'kenji' is not a character id",
        ),
        (_set("panels.1.characters", ["mei", "mei"]), "panels[1].characters[1]: 'mei' is listed twice"),
        (
            _set("panels.1.dialogue", ["d2", "d9", "d3"]),
            "panels[1].dialogue[1]: 'd9' is not the id of a dialogue",
        ),
        (
            _set("panels.1.dialogue", ["d1", "d2", "d3"]),
            "panels[1].dialogue[0]: line 'd1' is already in panels[0]",
        ),
        (_set("panels.1.dialogue", ["d2"]), "dialogue[2]: line 'd3' is in no panel"),
    ],
)
def test_each_semantic_rule_reports_its_path(edit: Edit, expected: str):
    data = example()
    edit(data)
    problems = validate_screenplay(data)
    assert any(p.startswith(expected) for p in problems), problems


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_set("dialogue.0.line", "x" * 121), "dialogue[0].line: "),
        (_set("panels.0.shot", "selfie"), "panels[0].shot: 'selfie' is not one of"),
        (_set("characters.0.id", "Akira"), "characters[0].id: 'Akira' does not match"),
        (_set("version", 3), "version: 3 is not one of [1, 2]"),
        (_set("dialogue.0.quote", 0), "dialogue[0].quote: 0 is less than the minimum of 1"),
        (_set("dialogue.0.quote", None), "dialogue[0].quote: None is not of type 'integer'"),
        (_set("panels.0.source", [0, 1]), "panels[0].source[0]: 0 is less than the minimum of 1"),
        (_set("panels.0.source", [1]), "panels[0].source: [1] is too short"),
        (_set("panels.0.props", ["a", "b", "c", "d", "e"]), "panels[0].props: "),
        (_set("characters", []), "characters: [] should be non-empty"),
    ],
)
def test_schema_problems_carry_json_paths(edit: Edit, expected: str):
    data = example()
    edit(data)
    problems = validate_screenplay(data)
    assert any(p.startswith(expected) for p in problems), problems


def test_missing_and_extra_keys_are_reported():
    data = example()
    del data["panels"][0]["lighting"]
    data["panels"][0]["mood"] = "tense"
    problems = validate_screenplay(data)
    assert "panels[0]: 'lighting' is a required property" in problems
    assert any(p.startswith("panels[0]: Additional properties are not allowed ('mood'") for p in problems)


def test_problems_come_in_document_order():
    data = example()
    data["panels"][1]["shot"] = "bad"
    data["dialogue"][2]["emotion"] = "bad"
    data["characters"][0]["name"] = ""
    problems = validate_screenplay(data)
    assert [p.split(":")[0] for p in problems] == [
        "characters[0].name",
        "dialogue[2].emotion",
        "panels[1].shot",
    ]


@pytest.mark.parametrize("data", [None, [], "screenplay", 3])
def test_non_objects_are_a_problem_not_a_crash(data: Any):
    assert validate_screenplay(data)[0].startswith("(top level): ")


def test_narrator_may_speak_but_is_not_a_character():
    data = example()
    assert data["dialogue"][0]["speaker"] == "narrator"
    assert validate_screenplay(data) == []


def test_load_screenplay_from_text_and_dict():
    data = example()
    assert isinstance(load_screenplay(json.dumps(data)), Screenplay)
    assert load_screenplay(copy.deepcopy(data)).title == "The Last Train"


def test_load_screenplay_lists_every_problem():
    data = example()
    data["dialogue"][1]["speaker"] = "kenji"
    data["panels"][1]["dialogue"] = ["d2"]
    with pytest.raises(InputError) as info:
        load_screenplay(data, source="chapter1.json")
    message = str(info.value)
    assert message.startswith("chapter1.json is not a valid screenplay (2 problems)")
    assert "dialogue[1].speaker" in message and "dialogue[2]: line 'd3' is in no panel" in message


def test_load_screenplay_rejects_bad_json():
    with pytest.raises(InputError, match="not valid JSON"):
        load_screenplay("{")
