"""Repairs: one mechanism for "listed twice" and padded strings, in any schema and in screenplays."""

from __future__ import annotations

import copy
import logging

import pytest

from mangaka.errors import InputError
from mangaka.repair import Repair, merge_repeats, tidy_strings
from mangaka.screenplay import load_screenplay, validate_screenplay
from mangaka.screenplay.example import example_screenplay
from mangaka.screenplay.repair import repair_cast, repair_screenplay

USER_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "nick": {"type": "string"},
        "code": {"type": "string", "pattern": "^ [A-Z]+$"},
        "mood": {"enum": [" calm", "angry"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"$ref": "#/$defs/word"}]},
    },
    "required": ["name", "tags"],
    "$defs": {"word": {"type": "string", "minLength": 3}},
}


def test_tidy_strings_trims_and_drops_only_what_stays_valid():
    data = {
        "name": "  Tama ",
        "nick": "   ",  # optional and blank: removed
        "code": " ABC",  # its pattern wants the space: kept
        "mood": " calm",  # an enum value: never touched
        "tags": ["cat ", " ", "", "grey"],  # blank items removed while minItems allows
        "pair": [" x ", " ab "],  # "ab" would be under minLength 3: kept as it is
    }
    original = copy.deepcopy(data)
    tidy, repairs = tidy_strings(data, USER_SCHEMA)
    assert data == original  # the input is not modified
    assert tidy == {
        "name": "Tama",
        "code": " ABC",
        "mood": " calm",
        "tags": ["cat", "grey"],
        "pair": ["x", " ab "],
    }
    assert [str(r) for r in repairs] == [
        "name: trimmed the spaces around '  Tama '",
        "nick: blank optional value removed",
        "tags[0]: trimmed the spaces around 'cat '",
        "tags[1]: blank item removed",
        "tags[2]: blank item removed",
        "pair[0]: trimmed the spaces around ' x '",
    ]


def test_tidy_strings_keeps_blank_items_a_list_needs():
    tidy, repairs = tidy_strings({"name": "a", "tags": [" ", "b"]}, USER_SCHEMA)
    assert tidy["tags"] == ["", "b"]  # minItems 2: trimmed, not removed
    assert [r.change for r in repairs] == ["trimmed the spaces around ' '"]


def test_a_required_blank_string_is_left_for_validation():
    tidy, repairs = tidy_strings({"name": "   ", "tags": []}, USER_SCHEMA)
    assert tidy["name"] == "   " and repairs == []  # minLength 1: the model must write it


def test_merge_repeats_maps_each_dropped_item_to_the_kept_one():
    kept, moved, repairs = merge_repeats(["a", "B", "b", "a"], str.lower, "xs", "letter")
    assert kept == ["a", "B"] and moved == {2: 1, 3: 0}
    assert repairs == [
        Repair("xs[2]", "letter 'b' listed again; merged into xs[1]"),
        Repair("xs[3]", "letter 'a' listed again; merged into xs[0]"),
    ]


def test_cast_repair_merges_names_leaves_out_the_narrator_and_suffixes_ids():
    cast = {
        "characters": [
            {"id": "lin", "name": "林月", "appearance": "a"},
            {"id": "narrator", "name": "旁白", "appearance": "b"},
            {"id": "lin_yue", "name": " 林月 ", "appearance": "c"},
            {"id": "lin", "name": "Lin Feng", "appearance": "d"},
        ]
    }
    fixed, repairs = repair_cast(cast)
    assert [(c["id"], c["name"]) for c in fixed["characters"]] == [("lin", "林月"), ("lin_2", "Lin Feng")]
    assert [str(r) for r in repairs] == [
        "characters[2]: character ' 林月 ' listed again; merged into characters[0]",
        "characters[1]: left out '旁白': narration uses the reserved speaker 'narrator'",
        "characters[3].id: 'lin' is another character's id; now 'lin_2'",
    ]


def _with_akira_twice() -> dict:
    data = example_screenplay()
    twin = {**data["characters"][0], "id": "akira_again", "name": "  akira"}
    data["characters"].append(twin)
    data["dialogue"][1]["speaker"] = "akira_again"
    data["panels"][0]["characters"] = ["akira_again", "akira"]
    data["panels"][1]["props"] = ["ticket", "Ticket", "  umbrella "]
    return data


def test_a_whole_screenplay_is_repaired_with_its_references_remapped(caplog):
    data = _with_akira_twice()
    assert validate_screenplay(data)  # invalid as it is
    repaired, repairs = repair_screenplay(data)
    assert validate_screenplay(repaired) == []
    assert [c["id"] for c in repaired["characters"]] == [c["id"] for c in example_screenplay()["characters"]]
    assert repaired["dialogue"][1]["speaker"] == "akira"
    assert repaired["panels"][0]["characters"] == ["akira"]
    assert repaired["panels"][1]["props"] == ["ticket", "  umbrella "]  # trimming is tidy_strings' part
    assert "dialogue[1].speaker: 'akira_again' → 'akira' (merged)" in [str(r) for r in repairs]
    with caplog.at_level(logging.INFO, logger="mangaka.screenplay.validate"):
        loaded = load_screenplay(data, source="book.json")
    assert loaded.panels[1].props == ["ticket", "umbrella"]
    assert any("book.json: repaired panels[1].props[2]: trimmed" in r.message for r in caplog.records)


def test_load_screenplay_without_repair_reports_the_problems():
    with pytest.raises(InputError, match=r"characters\[2\].name: '  akira' is already the name"):
        load_screenplay(_with_akira_twice(), repair=False)


def test_an_id_shared_by_two_names_is_not_guessed():
    data = example_screenplay()
    data["characters"].append({**data["characters"][1], "name": "Someone Else"})  # same id, new name
    repaired, _ = repair_screenplay(data)
    assert any("already the id" in p for p in validate_screenplay(repaired))
