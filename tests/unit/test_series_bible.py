"""The series bible: its format and schema file, loading errors, name mapping and ``updated_with``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mangaka.compose import build_bible, compile_prompts
from mangaka.errors import InputError
from mangaka.screenplay import Character, Screenplay, example_screenplay
from mangaka.screenplay.bible import (
    BIBLE_SCHEMA_FILE,
    BibleCharacter,
    SeriesBible,
    as_id,
    bible_schema_text,
    load_series_bible,
    parse_series_bible,
    save_series_bible,
    write_bible_schema,
)
from mangaka.screenplay.schema import SCHEMAS_DIR
from mangaka.structured import check_schema

DATA = Path(__file__).parent / "data"


def bible(*entries: dict) -> SeriesBible:
    return SeriesBible.model_validate({"version": 1, "characters": list(entries)})


LIN = {"id": "lin", "name": "Lin Yue", "aliases": ["Lin"], "appearance": "girl, black bob, red scarf"}


def test_schema_file_matches_the_model(tmp_path):
    path = SCHEMAS_DIR / BIBLE_SCHEMA_FILE
    assert path.read_text(encoding="utf-8") == bible_schema_text(), "run `python -m mangaka schemas`"
    assert write_bible_schema(tmp_path).read_text(encoding="utf-8") == bible_schema_text()


def test_a_bible_file_round_trips_and_is_valid_under_its_schema(tmp_path):
    b = bible(LIN, {"id": "kai", "name": "Kai", "trigger": "kai_lora", "first_chapter": 2, "edited": True})
    path = save_series_bible(b, tmp_path / "bible.json")
    assert load_series_bible(path) == b
    assert not list(check_schema(json.loads(bible_schema_text())).iter_errors(json.loads(path.read_text())))
    assert load_series_bible(tmp_path / "none.json", missing_ok=True) == SeriesBible()


def test_the_earlier_character_bible_still_loads():
    b = load_series_bible(DATA / "golden_bible.json")
    assert [c.id for c in b.characters] == ["lin", "ghost"]
    assert b.character("lin").trigger == "lin_mgk" and b.character("lin").name == ""
    legacy = parse_series_bible('[{"id": "Lin Yue", "name": "Lin", "hair": "black"}]')
    assert legacy.characters == [BibleCharacter(id="lin_yue", name="Lin")]
    assert as_id("7 Dwarfs!") == "c_7_dwarfs" and as_id("李") == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{oops", "bible: not valid JSON"),
        ('{"version": 1, "characters": [{"id": "Lin"}]}', "characters[0].id: String should match pattern"),
        ('{"version": 1, "characters": [{"id": "lin", "edited": "sometimes"}]}', "characters[0].edited"),
        ('{"version": 1, "characters": [{"id": "lin", "mood": "x"}]}', "characters[0].mood: Extra inputs"),
        ('{"version": 2, "characters": []}', "version: Input should be 1"),
        (
            '[{"id": "lin", "name": "Lin"}, {"id": "lin", "name": "Kai"}]',
            "characters[1].id: 'lin' is already characters[0]'s id ('Lin'), here reused for 'Kai'",
        ),
        ('[{"id": "lin", "name": "Lin"}, {"id": "lin", "name": " LIN"}]', "'lin' is listed twice"),
        (
            '[{"id": "lin", "name": "Lin Yue"}, {"id": "yue", "name": "Yue", "aliases": ["ＬＩＮ  yue"]}]',
            "characters[1]: the name 'lin yue' also names characters[0] ('lin')",
        ),
        ('[{"id": "narrator"}]', "'narrator' is the caption voice"),
    ],
)
def test_a_bad_bible_is_an_input_error_naming_the_field(text, message):
    with pytest.raises(InputError, match=re.escape(message)) as err:
        parse_series_bible(text, source="bible")
    if text.startswith("{") and "version" in text:
        assert "schemas/bible.schema.json" in str(err.value)


def test_a_known_name_or_alias_maps_to_the_known_id_and_its_look():
    b = bible(LIN)
    cast = [
        Character(id="lin_yue", name="ｌｉｎ", appearance="model's own look"),  # NFKC + casefold: an alias
        Character(id="protagonist", name="Lin Yue", appearance="another look"),  # the name: the same person
        Character(id="kai", name="Kai", appearance="tall boy"),
    ]
    mapped, mapping = b.map_cast(cast)
    assert mapping == {"lin_yue": "lin", "protagonist": "lin", "kai": "kai"}
    assert [c.id for c in mapped] == ["lin", "kai"]
    assert mapped[0] == Character(id="lin", name="Lin Yue", appearance="girl, black bob, red scarf")
    # a known id with a name the bible has not seen is the known character too
    assert b.map_cast([Character(id="lin", name="Miss Lin", appearance="x")])[1] == {"lin": "lin"}


def test_remap_rewrites_every_reference():
    sp = Screenplay.model_validate(example_screenplay())
    first = sp.characters[0]
    b = bible({"id": "hero", "name": first.name.upper(), "appearance": "bible look"})
    remapped = b.remap(sp)
    assert remapped.characters[0].id == "hero" and remapped.characters[0].appearance == "bible look"
    old_speakers = [d.speaker for d in sp.dialogue]
    assert [d.speaker for d in remapped.dialogue] == ["hero" if s == first.id else s for s in old_speakers]
    assert all(first.id not in p.characters for p in remapped.panels)
    assert sum("hero" in p.characters for p in remapped.panels) == sum(
        first.id in p.characters for p in sp.panels
    )


def test_updated_with_adds_new_characters_and_leaves_edited_entries_alone():
    b = bible(LIN, {"id": "kai", "name": "Kai", "appearance": "", "edited": True})
    cast = [
        Character(id="lin", name="Little Lin", appearance="a different look"),
        Character(id="kai", name="Kai the Bold", appearance="tall"),
        Character(id="mei", name="Mei", appearance="old woman"),
    ]
    after = b.updated_with(cast, 3)
    assert b.character("mei") is None  # a new bible; this one is unchanged
    lin, kai, mei = after.characters
    assert lin.aliases == ["Lin", "Little Lin"] and lin.appearance == LIN["appearance"]  # the look kept
    assert lin.first_chapter == 3  # it had none
    assert kai == b.character("kai")  # edited: untouched
    assert mei == BibleCharacter(id="mei", name="Mei", appearance="old woman", first_chapter=3)
    assert after.updated_with(cast, 4) == after  # nothing new the second time


def test_the_sd_prompts_bible_takes_the_series_bible():
    sp = Screenplay.model_validate(example_screenplay())
    first = sp.characters[0]
    b = bible(
        {"id": "someone", "name": "x", "aliases": [first.name], "appearance": "bible look", "trigger": "t1"}
    )
    entry = build_bible(sp, b)[first.id]
    assert (entry.appearance, entry.trigger) == ("bible look", "t1")
    compiled = compile_prompts(sp, style="manga_bw", bible=build_bible(sp, b))
    assert any("t1, bible look" in p.positive for p in compiled.panels if first.id in p.characters)


def test_book_refuses_a_bad_bible_before_the_model_loads(tmp_path, caplog):
    from mangaka.cli.main import main

    book = tmp_path / "book.txt"
    book.write_text("Chapter 1: One\n\nMara drew water.\n\nChapter 2: Two\n\nIlse came.\n", encoding="utf-8")
    bad = tmp_path / "bible.json"
    bad.write_text('[{"id": "lin", "name": "Lin"}, {"id": "lin", "name": "Kai"}]', encoding="utf-8")
    model = tmp_path / "missing.gguf"  # never reached: the bible is checked first
    assert (
        main(["book", str(book), "--model", str(model), "-o", str(tmp_path / "out"), "--bible", str(bad)])
        != 0
    )
    assert "'lin' is already characters[0]'s id" in caplog.text and "missing.gguf" not in caplog.text


def test_merged_adds_other_bibles_people_and_never_touches_an_edited_entry():
    start = bible(LIN, {"id": "tan", "name": "Old Tan", "appearance": "", "edited": True})
    chapter_2 = bible(
        {**LIN, "aliases": ["Lin", "Little Lin"], "first_chapter": 2},
        {"id": "tan", "name": "Old Tan", "appearance": "a new look", "first_chapter": 2},
        {"id": "mei", "name": "Mei", "trigger": "mei_mgk", "notes": "sheet 4", "first_chapter": 2},
    )
    chapter_3 = bible(LIN, {"id": "bo", "name": "Bo", "aliases": ["Mei"], "first_chapter": 3})
    merged = start.merged(chapter_2).merged(chapter_3)
    assert [c.id for c in merged.characters] == ["lin", "tan", "mei"]  # Bo is Mei by name
    assert (
        merged.character("lin").aliases == ["Lin", "Little Lin"]
        and merged.character("lin").first_chapter == 2
    )
    assert merged.character("tan") == start.character("tan")  # edited: left as it is
    assert merged.character("mei").trigger == "mei_mgk" and merged.character("mei").aliases == ["Bo"]
    assert start.merged(SeriesBible()) == start and SeriesBible().merged(start) == start
