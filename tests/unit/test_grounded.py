"""Grounded screenplays (``dialogue_from="chapter"``, ``screenplay/grounded.py``): the cast is the
names the chapter uses, the dialogue is its quoted lines verbatim, the panels tile its units in order.
Driven by a scripted fake LLM whose replies may be built from the call's schema (the quote numbers,
unit starts and likely speakers it fixes)."""

from __future__ import annotations

import copy
import itertools
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from mangaka.errors import InvalidOutputError
from mangaka.screenplay import load_screenplay, validate_screenplay, write_cast, write_screenplay
from mangaka.screenplay.grounded import (
    Grounding,
    assemble_grounded,
    fill_empty_captions,
    grounded_problems,
    name_problems,
    panel_ranges,
    repair_grounded,
    repair_ids,
    strip_annotations,
)
from mangaka.screenplay.models import MAX_LINE, NARRATOR, SCREENPLAY_VERSION
from mangaka.screenplay.request import ScreenplayRequest
from mangaka.screenplay.schema import grounded_script_call_schema
from mangaka.source import source_map
from tests.fakes import FakeScriptedLLM
from tests.unit.support import CAST, EN, ZH, SchemaLLM, cast_reply, grounded_script, script_reply

GOLD = Path(__file__).resolve().parents[2] / "mangaka" / "evaluate" / "gold"


def answer(schema: dict[str, Any]) -> dict[str, Any]:
    """Any call of a grounded screenplay, answered from its schema."""
    return cast_reply(schema) if "characters" in schema["properties"] else script_reply(schema)


def names_of(chapter: str, language: str) -> list[str]:
    return [c.name for c in source_map(chapter, language).names]


def _scene(name: str, other: str, n: int) -> str:
    """``n`` paragraphs, each a line ``name`` says (attributed)."""
    return "\n\n".join(f'{name} looked at {other}. "Line {k} of {name}," said {name}.' for k in range(n))


# ---- the cast ----


@pytest.mark.parametrize(("chapter", "language"), [(EN, "en"), (ZH, "zh")])
def test_the_cast_call_writes_the_names_the_chapter_uses(chapter: str, language: str):
    names = names_of(chapter, language)
    assert names, "the chapter names somebody"
    if language == "en":
        assert "Mei" in names  # "…," said Mei
    llm = SchemaLLM(cast_reply)
    cast = write_cast(llm, chapter, ScreenplayRequest(language=language, max_characters=8)).value
    array = llm.calls[0]["schema"]["properties"]["characters"]
    assert [item["properties"]["name"]["const"] for item in array["prefixItems"]] == names
    assert array["items"] is False and array["minItems"] == array["maxItems"] == len(names)
    assert [c.name for c in cast] == names
    if language == "en":  # a name with a Latin spelling gets its id from the grammar too
        assert array["prefixItems"][0]["properties"]["id"]["const"] == "mei" == cast[0].id


def test_the_cast_lists_at_most_max_characters_names_strongest_first():
    chapter = _scene("Mei", "Akira", 3) + "\n\n" + _scene("Akira", "Mei", 2)
    names = names_of(chapter, "en")
    assert names[:2] == ["Mei", "Akira"]
    llm = SchemaLLM(cast_reply)
    assert [c.name for c in write_cast(llm, chapter, ScreenplayRequest(max_characters=1)).value] == ["Mei"]
    array = llm.calls[0]["schema"]["properties"]["characters"]
    assert [item["properties"]["name"]["const"] for item in array["prefixItems"]] == ["Mei"]


def test_a_name_the_chapter_does_not_use_is_retried_naming_the_candidates_then_refused():
    other = {"characters": [{"id": "kenji", "name": "Kenji", "appearance": "an old man"}]}
    names = names_of(EN, "en")
    # a server that ignores the schema: another name, then the chapter's
    llm = SchemaLLM(other, cast_reply)
    result = write_cast(llm, EN, ScreenplayRequest())
    assert [a.call for a in result.attempts] == ["screenplay cast"] * 2
    feedback = llm.calls[1]["messages"][-1]["content"]
    assert f"characters[0].name: {names[0]!r} was expected" in feedback
    assert [c.name for c in result.value] == names
    # never the chapter's names: refused after the last try, every try reported
    llm = SchemaLLM(*[other] * 3)
    with pytest.raises(InvalidOutputError, match=r"screenplay cast: .* all 3 tries") as info:
        write_screenplay(llm, EN, ScreenplayRequest(panels=3, dialogue=3, max_attempts=3))
    assert [a["call"] for a in info.value.attempts] == ["screenplay cast"] * 3
    assert all(a["problems"] for a in info.value.attempts)
    # the check behind a cast without forced names: it lists what the chapter uses
    assert name_problems([{"name": "Mei"}, {"name": "Kenji"}], ["Mei", "Akira"]) == [
        "characters[1].name: 'Kenji' is not a name this chapter uses; choose one of: Mei, Akira"
    ]
    assert name_problems([{"name": " MEI "}], ["Mei"]) == []  # folded, as names are compared


def test_a_named_character_given_the_narrator_id_gets_an_id_of_its_own(caplog):
    """A name without a Latin spelling leaves its id to the model, which may write the narrator's."""
    names = names_of(ZH, "zh")
    llm = SchemaLLM(cast_reply)
    write_cast(llm, ZH, ScreenplayRequest(language="zh"))
    (item, *_) = llm.calls[0]["schema"]["properties"]["characters"]["prefixItems"]
    assert "const" not in item["properties"]["id"]  # the model writes it

    def narrator_ids(schema: dict[str, Any]) -> dict[str, Any]:
        reply = cast_reply(schema)
        reply["characters"][0]["id"] = NARRATOR
        return reply

    llm = SchemaLLM(narrator_ids)
    with caplog.at_level(logging.INFO, logger="mangaka.structured"):
        result = write_cast(llm, ZH, ScreenplayRequest(language="zh"))
    assert len(result.attempts) == 1 and result.attempts[0].problems == []  # repaired, not retried
    assert result.value[0].id == "character_1" and result.value[0].name == names[0]
    wanted = "characters[0].id: 'narrator' is reserved for captions; now 'character_1'"
    assert wanted in result.attempts[0].repairs and wanted in caplog.text
    data = {"characters": [{"id": "mei", "name": "Mei"}, {"id": NARRATOR, "name": "Akira"}]}
    fixed, repairs = repair_ids(copy.deepcopy(data))
    assert [c["id"] for c in fixed["characters"]] == ["mei", "character_2"] and len(repairs) == 1
    assert repair_ids({"characters": [{"id": "mei", "name": "Mei"}]})[1] == []


# ---- the script call's schema ----


def _schema(grounding: Grounding, dialogue: int, panels: int = 3) -> dict[str, Any]:
    numbers = [line.number for line in grounding.lines]
    return grounded_script_call_schema(["mei", "akira"], panels, grounding.units, numbers, dialogue)


def test_every_quoted_line_kept_is_a_const_in_order_and_the_rest_are_captions():
    grounding = Grounding.of(EN, "en")
    assert grounding.units == (1, 3) and [line.number for line in grounding.lines] == [1, 2, 3]
    schema = _schema(grounding, dialogue=5)
    dialogue = schema["properties"]["dialogue"]
    assert [item["properties"]["quote"]["const"] for item in dialogue["prefixItems"]] == [1, 2, 3]
    assert dialogue["items"] is False and dialogue["minItems"] == dialogue["maxItems"] == 3
    captions = schema["properties"]["captions"]
    assert captions["minItems"] == captions["maxItems"] == 2  # dialogue - quoted lines
    assert captions["items"]["properties"]["panel"]["enum"] == ["p1", "p2", "p3"]
    panels = schema["properties"]["panels"]["prefixItems"]
    assert panels[0]["properties"]["from"] == {"type": "integer", "const": 1}
    assert "line" not in dialogue["prefixItems"][0]["properties"]  # the words come from the chapter
    assert _schema(grounding, dialogue=3)["properties"]["captions"]["maxItems"] == 0


def test_fewer_lines_than_quotes_choose_from_an_enum_and_no_caption():
    grounding = Grounding.of(EN, "en")
    schema = _schema(grounding, dialogue=2)
    dialogue = schema["properties"]["dialogue"]
    assert "prefixItems" not in dialogue
    assert dialogue["items"]["properties"]["quote"] == {"type": "integer", "enum": [1, 2, 3]}
    assert dialogue["minItems"] == dialogue["maxItems"] == 2
    assert schema["properties"]["captions"]["maxItems"] == 0


def test_a_scenes_first_panel_starts_at_its_first_unit():
    grounding = Grounding(Grounding.of(EN, "en").map, 2, 3)
    schema = _schema(grounding, dialogue=3, panels=2)
    panels = schema["properties"]["panels"]["prefixItems"]
    assert panels[0]["properties"]["from"]["const"] == 2
    assert schema["$defs"]["from"]["enum"] == [2, 3]  # a later panel starts within the scene
    dialogue = schema["properties"]["dialogue"]["prefixItems"]
    assert [item["properties"]["quote"]["const"] for item in dialogue] == [1, 2, 3]


def test_the_call_gets_numbered_units_and_its_panels_start_in_order():
    llm = SchemaLLM(cast_reply, script_reply)
    write_screenplay(llm, EN, ScreenplayRequest(panels=3, dialogue=4))
    text = llm.calls[1]["messages"][1]["content"]
    for n in (1, 2, 3):
        assert f"[{n}] {source_map(EN, 'en').unit_text(n)}" in text
    schema = llm.calls[1]["schema"]
    starts = [p["properties"]["from"].get("const") for p in schema["properties"]["panels"]["prefixItems"]]
    assert starts[0] == 1
    fixed = [s for s in starts if s is not None]
    assert fixed == sorted(fixed) and all(1 <= s <= 3 for s in fixed)


# ---- assembly ----


def test_assembly_ties_panels_to_units_and_letters_each_quoted_line_verbatim_in_its_panel():
    grounding = Grounding.of(EN, "en")
    sp = assemble_grounded(grounded_script([1, 2, 3], [1, 2, 3], ["p3", "p1"]), CAST, "en", grounding)
    assert validate_screenplay(sp.model_dump(mode="json")) == []
    assert sp.version == SCREENPLAY_VERSION == 2
    assert [p.source for p in sp.panels] == [[1, 1], [2, 2], [3, 3]]
    lines = {d.id: d for d in sp.dialogue}
    placed = [[(lines[i].speaker, lines[i].quote) for i in p.dialogue] for p in sp.panels]
    # the caption first in its panel; a quoted line in the panel whose units hold it
    assert placed == [[(NARRATOR, None)], [("mei", 1)], [(NARRATOR, None), ("akira", 2), ("akira", 3)]]
    assert [d.id for d in sp.dialogue] == ["d1", "d2", "d3", "d4", "d5"]  # reading order
    source = source_map(EN, "en")
    quoted = [d for d in sp.dialogue if d.quote is not None]
    assert [d.line for d in quoted] == [line.text for line in source.lines]
    assert [d.line for d in quoted] == ["We are closed,", "One cup, then I will go.", "Only one."]
    for d in quoted:
        unit = source.quotes[d.quote - 1].unit
        (owner,) = [p for p in sp.panels if d.id in p.dialogue]
        assert owner.source[0] <= unit <= owner.source[1]
    data = sp.model_dump(mode="json")
    assert "quote" not in data["dialogue"][0] and data["dialogue"][1]["quote"] == 1
    assert data["panels"][0]["source"] == [1, 1]


def test_panels_tile_the_units_and_share_the_lines_of_a_unit_they_start_at():
    grounding = Grounding.of(EN, "en")
    assert panel_ranges([1, 1, 3], 3) == [(1, 1), (1, 2), (3, 3)]
    sp = assemble_grounded(grounded_script([1, 3, 3], [1, 2, 3], []), CAST, "en", grounding)
    assert [p.source for p in sp.panels] == [[1, 2], [3, 3], [3, 3]]
    quotes = [[next(d.quote for d in sp.dialogue if d.id == i) for i in p.dialogue] for p in sp.panels]
    assert quotes == [[1], [2], [3]]  # unit 3's two lines, one to each panel starting there, in order
    covered = sorted({u for p in sp.panels for u in range(p.source[0], p.source[1] + 1)})
    assert covered == [1, 2, 3]


def test_out_of_order_starts_and_quotes_are_sorted_as_repairs_and_nothing_is_dropped():
    script = grounded_script([1, 3, 2], [3, 1], [])
    fixed, repairs = repair_grounded(copy.deepcopy(script))
    assert [p["from"] for p in fixed["panels"]] == [1, 2, 3]
    assert [p["id"] for p in fixed["panels"]] == ["p1", "p2", "p3"]
    assert fixed["dialogue"] == [script["dialogue"][1], script["dialogue"][0]]  # each keeps its speaker
    assert [str(r) for r in repairs] == [
        "panels[].from: starts [1, 3, 2] sorted into chapter order",
        "dialogue[].quote: lines [3, 1] sorted into the chapter's order",
    ]
    in_order = grounded_script([1, 2, 3], [1, 3], [])
    assert repair_grounded(copy.deepcopy(in_order)) == (in_order, [])
    # in a call: two of three lines chosen (an enum), backwards; repaired, logged, not retried
    llm = SchemaLLM(cast_reply, lambda schema: script_reply(schema, quotes=[3, 1]))
    result = write_screenplay(llm, EN, ScreenplayRequest(panels=3, dialogue=2))
    assert len(result.attempts) == 2
    assert (
        "screenplay script: dialogue[].quote: lines [3, 1] sorted into the chapter's order" in result.repairs
    )
    assert [d.quote for d in result.screenplay.dialogue] == [1, 3]


def test_a_quoted_line_chosen_twice_becomes_the_nearest_line_not_chosen():
    grounding = Grounding.of(EN, "en")
    numbers = [line.number for line in grounding.lines]
    assert numbers == [1, 2, 3]
    fixed, repairs = repair_grounded(grounded_script([1, 2, 3], [2, 2], []), numbers)
    assert [d["quote"] for d in fixed["dialogue"]] == [2, 3]  # the next one after it first
    assert [str(r) for r in repairs] == [
        "dialogue[1].quote: line 2 chosen again; now line 3, the nearest not chosen"
    ]
    fixed, repairs = repair_grounded(grounded_script([1, 2, 3], [3, 3], []), numbers)
    assert [d["quote"] for d in fixed["dialogue"]] == [2, 3]  # none after: the one before, then sorted
    assert len(repairs) == 2
    # a duplicate left after repair (no line free) is still a problem for the model
    assert grounded_problems(grounded_script([1, 2, 3], [2, 2], []), grounding) == [
        "dialogue[1].quote: line 2 is already used; choose another one"
    ]
    scene = Grounding(grounding.map, 3, 3)  # quote 1 is in unit 2, outside this part
    assert grounded_problems(grounded_script([3], [1], []), scene) == [
        "dialogue[0].quote: 1 is not one of the quoted lines listed"
    ]
    # in a call: repaired and logged, never retried
    llm = SchemaLLM(cast_reply, lambda schema: script_reply(schema, quotes=[2, 2]))
    result = write_screenplay(llm, EN, ScreenplayRequest(panels=3, dialogue=2))
    assert len(result.attempts) == 2
    assert (
        "screenplay script: dialogue[1].quote: line 2 chosen again; now line 3, the nearest not chosen"
        in result.repairs
    )
    assert [d.quote for d in result.screenplay.dialogue] == [2, 3]


# ---- whole screenplays ----


@pytest.mark.parametrize(("chapter", "language"), [(EN, "en"), (ZH, "zh")])
def test_a_grounded_screenplay_letters_the_chapters_quotes(chapter: str, language: str):
    source = source_map(chapter, language)
    assert len(source.units) == 3 and len(source.quotes) == 3
    llm = SchemaLLM(cast_reply, script_reply)
    result = write_screenplay(llm, chapter, ScreenplayRequest(language=language, panels=3, dialogue=4))
    sp = result.screenplay
    assert validate_screenplay(sp.model_dump(mode="json")) == []
    quoted = [d for d in sp.dialogue if d.quote is not None]
    assert [d.line for d in quoted] == [line.text for line in source.lines]
    assert [d.quote for d in quoted] == [line.quote for line in source.lines]
    assert [d.speaker for d in sp.dialogue if d.quote is None] == [NARRATOR]  # 4 lines: 3 quotes + 1 caption
    assert sp.panels[0].source[0] == 1 and sp.panels[-1].source[1] == 3
    assert [c.name for c in sp.characters] == names_of(chapter, language)
    assert result.repairs == []


def test_a_quote_longer_than_a_balloon_is_lettered_over_consecutive_lines():
    speech = " ".join(f"Sentence number {k} of the long speech goes on for a while." for k in range(1, 7))
    chapter = f'Mei stood up.\n\n"{speech}" said Mei.\n\nNobody answered Mei.'
    source = source_map(chapter, "en")
    (quote,) = source.quotes
    parts = [line for line in source.lines if line.quote == quote.number]
    assert len(parts) > 1 and all(len(p.text) <= MAX_LINE for p in parts)
    llm = SchemaLLM(cast_reply, script_reply)
    sp = write_screenplay(llm, chapter, ScreenplayRequest(panels=2, dialogue=len(parts))).screenplay
    assert validate_screenplay(sp.model_dump(mode="json")) == []
    assert [d.quote for d in sp.dialogue] == [quote.number] * len(parts)
    assert [d.line for d in sp.dialogue] == [p.text for p in parts]
    assert " ".join(d.line for d in sp.dialogue) == " ".join(speech.split())  # nothing dropped
    owners = [next(p.id for p in sp.panels if d.id in p.dialogue) for d in sp.dialogue]
    assert owners == sorted(owners)  # consecutive, in reading order


def test_a_chapter_without_quote_marks_warns_and_gets_captions_only(caplog):
    chapter = "Rain fell on the station.\n\nMei waited for the train.\n\nThe train never came for Mei."
    assert source_map(chapter, "en").quotes == ()
    llm = SchemaLLM(answer, answer)
    with caplog.at_level(logging.WARNING):
        sp = write_screenplay(llm, chapter, ScreenplayRequest(panels=2, dialogue=2)).screenplay
    assert "no quoted lines found" in caplog.text
    schema = llm.calls[1]["schema"]
    assert schema["properties"]["dialogue"]["maxItems"] == 0
    assert schema["properties"]["captions"]["minItems"] == 2
    assert [(d.speaker, d.quote) for d in sp.dialogue] == [(NARRATOR, None)] * 2
    assert validate_screenplay(sp.model_dump(mode="json")) == []


def test_a_chapter_written_scene_by_scene_covers_its_units_in_order_with_the_chapters_quote_numbers():
    chapter = "\n\n".join(
        [_scene("Mei", "Akira", 4), "***", _scene("Akira", "Mei", 4), "***", _scene("Mei", "Akira", 3)]
    )
    source = source_map(chapter, "en")
    llm = SchemaLLM(*[answer] * 12, n_ctx=200_000)
    result = write_screenplay(llm, chapter, ScreenplayRequest(panels=6, dialogue="auto", scene_chars=250))
    sp = result.screenplay
    assert len(result.scenes) == 3
    assert validate_screenplay(sp.model_dump(mode="json")) == []
    # the panels tile the chapter's units, in order, across scenes
    ranges = [tuple(p.source) for p in sp.panels]
    assert ranges[0][0] == 1 and ranges[-1][1] == len(source.units)
    for (a1, b1), (a2, b2) in itertools.pairwise(ranges):
        assert a1 <= b1 and a1 <= a2 <= b1 + 1 and a2 <= b2, ranges  # no gap, never back
    assert sorted({u for a, b in ranges for u in range(a, b + 1)}) == list(range(1, len(source.units) + 1))
    # every quoted line, by the chapter's own numbers, verbatim
    quoted = [d for d in sp.dialogue if d.quote is not None]
    assert [d.quote for d in quoted] == [q.number for q in source.quotes]
    assert [d.line for d in quoted] == [line.text for line in source.lines]
    for d in quoted:
        (owner,) = [p for p in sp.panels if d.id in p.dialogue]
        assert owner.source[0] <= source.quotes[d.quote - 1].unit <= owner.source[1]
    # each scene's call: its own units and quote numbers, its first panel at its first unit
    scripts = [c["schema"] for c in llm.calls if "panels" in c["schema"]["properties"]]
    firsts = [s["properties"]["panels"]["prefixItems"][0]["properties"]["from"]["const"] for s in scripts]
    numbers = [
        [item["properties"]["quote"]["const"] for item in s["properties"]["dialogue"]["prefixItems"]]
        for s in scripts
    ]
    assert list(itertools.chain(*numbers)) == [q.number for q in source.quotes] and all(numbers)
    scene_of = {p.id: p.scene for p in sp.panels}
    assert firsts == [min(p.source[0] for p in sp.panels if scene_of[p.id] == s) for s in (1, 2, 3)]
    assert firsts[0] == 1 and firsts == sorted(firsts)


# ---- the stored format ----


def test_a_version_1_screenplay_still_loads_without_quote_or_source():
    text = (GOLD / "en1.reference.json").read_text(encoding="utf-8")
    assert json.loads(text)["version"] == 1
    sp = load_screenplay(text)
    assert sp.version == 1
    assert all(d.quote is None for d in sp.dialogue) and all(p.source is None for p in sp.panels)
    data = sp.model_dump(mode="json")
    assert not any("quote" in d for d in data["dialogue"])
    assert not any("source" in p for p in data["panels"])
    assert data == load_screenplay(json.dumps(data)).model_dump(mode="json")


def test_free_mode_still_writes_the_models_own_lines():
    """The old behaviour (``dialogue_from="free"``): no source map, no quote or source references."""
    free_cast = {"characters": [{"id": "mei", "name": "Mei", "appearance": "girl"}]}
    free_script = {
        "title": "T",
        "dialogue": [{"speaker": "mei", "line": "My own words.", "emotion": "happy", "panel": "p1"}],
        "panels": [grounded_script([1], [], [])["panels"][0] | {"characters": ["mei"]}],
    }
    free_script["panels"][0].pop("from")
    llm = FakeScriptedLLM(free_cast, free_script)
    sp = write_screenplay(llm, EN, ScreenplayRequest(panels=1, dialogue=1, dialogue_from="free")).screenplay
    assert sp.dialogue[0].line == "My own words." and sp.dialogue[0].quote is None
    assert sp.panels[0].source is None
    assert EN.strip() in llm.calls[0]["messages"][1]["content"]  # the chapter as written, not numbered


def test_a_chapter_naming_nobody_gets_the_models_cast_even_with_a_bible(caplog):
    from mangaka.screenplay import SeriesBible

    chapter = "Rain fell on the station.\n\nKenji waited for the train."
    assert source_map(chapter, "en").names == ()
    bible = SeriesBible.model_validate(
        {"version": 1, "characters": [{"id": "mei", "name": "Mei", "appearance": "girl"}]}
    )
    kenji = {"characters": [{"id": "kenji", "name": "Kenji", "appearance": "an old man"}]}
    with caplog.at_level(logging.WARNING):
        cast = write_cast(SchemaLLM(kenji), chapter, ScreenplayRequest(), bible=bible).value
    assert [c.name for c in cast] == ["Kenji"]
    assert "names nobody" in caplog.text


def test_the_prompts_annotations_never_reach_a_screenplay():
    """A small model copies the listing's ``[3, likely mei]`` into free text: every string of a
    reply is cleaned (and the repair logged); one left empty is sent back by validation."""
    leaked = {
        "title": "Chapter 1: The Lantern Shop. Chapter 2: [3, likely mei] by [7, mei] (2022) in [6",
        "panels": [{"id": "p1", "action": "[3] Mei enters", "props": ["[4, part 1 of 2] lamp"]}],
        "captions": [{"line": "Rain [2]–[5] falls", "panel": "p1"}],
        "dialogue": [{"quote": 3, "speaker": "mei", "emotion": "neutral"}],
    }
    clean, repairs = strip_annotations(leaked)
    assert clean["title"] == "Chapter 1: The Lantern Shop. Chapter 2: by (2022) in"
    assert clean["panels"][0] == {"id": "p1", "action": "Mei enters", "props": ["lamp"]}
    assert clean["captions"][0]["line"] == "Rain falls" and clean["dialogue"] == leaked["dialogue"]
    assert [r.path for r in repairs] == [
        "title",
        "panels[0].action",
        "panels[0].props[0]",
        "captions[0].line",
    ]
    assert strip_annotations(clean) == (clean, [])
    assert strip_annotations({"title": "The [Redacted] file, part [two]"})[1] == []


def test_a_caption_left_empty_by_the_cleaning_gets_its_panels_narration():
    """The embedded model wrote a caption that was only ``[3, likely mei]``, three tries running: it
    became empty, and the screenplay was invalid. Its panel's own narration fills it, quotes left out."""
    grounding = Grounding.of(EN, "en")
    unit = next(
        u for u, _ in enumerate(grounding.map.units, 1) if any(q.unit == u for q in grounding.map.quotes)
    )
    script = {
        "panels": [{"id": "p1", "from": unit}],
        "captions": [{"line": "[3, likely mei]", "panel": "p1"}, {"line": "Rain.", "panel": "p1"}],
    }
    clean, _ = strip_annotations(script)
    filled, repairs = fill_empty_captions(clean, grounding)
    line = filled["captions"][0]["line"]
    assert line and line in " ".join(grounding.map.unit_text(unit).split())
    assert not any(q.text in line for q in grounding.map.quotes if q.unit == unit)
    assert filled["captions"][1] == script["captions"][1] and [r.path for r in repairs] == [
        "captions[0].line"
    ]
    assert fill_empty_captions(filled, grounding) == (filled, [])


def test_a_caption_on_a_line_of_dialogue_alone_gets_the_nearest_narration():
    chapter = (
        'Rain fell on the tin roof.\n\n"Who is there?"\n\n"Only me."\n\nMei shook her umbrella by the door.'
    )
    grounding = Grounding.of(chapter, "en")
    quote_only = grounding.map.quotes[0].unit
    script = {"panels": [{"id": "p1", "from": quote_only}], "captions": [{"line": "", "panel": "p1"}]}
    filled, _ = fill_empty_captions(script, grounding)
    assert filled["captions"][0]["line"] == "Mei shook her umbrella by the door."
