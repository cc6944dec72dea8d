"""One cast across a book, on a real (tiny, random-weight) model: the series bible.

The random model's names are random, so nothing here hopes it repeats a name: the bible is given
up front, the model's own cast output is put into a bible under another id, and every assertion
is an invariant of the run (one id per name across chapters, first_chapter = the first chapter
that lists the id, edited entries untouched, hand edits kept on a rerun)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mangaka.batch.book import write_book
from mangaka.compose import build_bible
from mangaka.devtools.tiny_models import write_model
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions
from mangaka.names import fold
from mangaka.screenplay import (
    ScreenplayRequest,
    SeriesBible,
    load_screenplay,
    load_series_bible,
    save_series_bible,
    write_cast,
    write_screenplay,
)
from tests.model.support import BOOK

REQUEST = ScreenplayRequest(panels=2, dialogue=2, max_characters=3, sampling="greedy", max_attempts=3)
MARA = {"id": "mara", "name": "Mara", "appearance": "tall woman, grey braid, blue shawl", "edited": True}


@pytest.fixture(scope="module")
def llm(tmp_path_factory) -> LlamaCppLLM:
    model = write_model(
        tmp_path_factory.mktemp("bible") / "qwen35moe-32k.gguf", "qwen35moe", context_length=32768
    )
    return LlamaCppLLM(model, LoadOptions(n_ctx=32768, n_threads=1))


def screenplays(out: Path) -> dict[int, object]:
    return {
        int(p.name[:2]): load_screenplay(p.read_text(encoding="utf-8"))
        for p in sorted(out.glob("[0-9]*.json"))
    }


def test_a_name_the_model_wrote_is_mapped_to_the_bible_id(llm):
    chapter = BOOK.split("Chapter 1: The Well", 1)[1].split("Chapter 2")[0]
    cast = write_cast(llm, chapter, REQUEST).value  # the model's own names and ids
    first = cast[0]
    bible = SeriesBible.model_validate(
        {
            "version": 1,
            "characters": [
                {"id": "hero", "name": "x", "aliases": [first.name.upper()], "appearance": "bible look"}
            ],
        }
    )
    sp = write_screenplay(llm, chapter, REQUEST, cast=cast, bible=bible).screenplay
    assert sp.characters[0].id == "hero" and sp.characters[0].appearance == "bible look"
    assert first.id == "hero" or first.id not in {c.id for c in sp.characters}
    assert {d.speaker for d in sp.dialogue} <= {c.id for c in sp.characters} | {"narrator"}


def test_a_book_keeps_one_id_per_person_and_resumes_with_hand_edits(llm, tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(BOOK, encoding="utf-8")
    out = tmp_path / "out"
    bible_file = out / "bible.json"
    save_series_bible(SeriesBible.model_validate({"version": 1, "characters": [MARA]}), bible_file)

    first = write_book(llm, book, out, request=REQUEST)
    assert first.ok and len(first.written) == 3, first.failed
    bible = load_series_bible(bible_file)
    assert bible == first.bible
    written = screenplays(out)
    assert bible.character("mara").model_dump() == {**bible.character("mara").model_dump(), **MARA}
    ids_of_name: dict[str, set[str]] = {}
    first_seen: dict[str, int] = {}
    for number, sp in written.items():
        for c in sp.characters:
            entry = bible.character(c.id)
            assert entry is not None, f"chapter {number}: {c.id} is not in the bible"
            assert c.name in entry.names and c.appearance == (entry.appearance or c.appearance)
            ids_of_name.setdefault(fold(c.name), set()).add(c.id)
            first_seen.setdefault(c.id, number)
    assert all(len(ids) == 1 for ids in ids_of_name.values()), ids_of_name  # one id per person
    for entry in bible.characters:
        if entry.id != "mara":
            assert entry.first_chapter == first_seen[entry.id]  # added by the chapter that met them
    assert {1, 2} <= {e.first_chapter for e in bible.characters if e.id != "mara"}  # ch. 2 met someone

    # a person edits every look between two runs (no edited flag), and chapter 3 is written again
    data = json.loads(bible_file.read_text(encoding="utf-8"))
    for i, c in enumerate(data["characters"]):
        c["appearance"] = f"hand-edited look {i}"
    bible_file.write_text(json.dumps(data), encoding="utf-8")
    kept = {n: p.read_bytes() for n, p in enumerate(sorted(out.glob("[0-9]*.json")), 1)}
    next(out.glob("03 *.json")).unlink()

    again = write_book(llm, book, out, request=REQUEST)
    assert again.ok and len(again.written) == 1 and len(again.skipped) == 2
    assert {n: p.read_bytes() for n, p in enumerate(sorted(out.glob("[0-9]*.json")), 1) if n < 3} == {
        n: b for n, b in kept.items() if n < 3
    }
    after = load_series_bible(bible_file)
    edited = {c["id"]: c["appearance"] for c in data["characters"]}
    assert all(after.character(i).appearance == look for i, look in edited.items())  # never rewritten
    ch3 = screenplays(out)[3]
    assert all(c.appearance == edited[c.id] for c in ch3.characters if c.id in edited)
    # the SD Prompts compiler draws the bible's looks
    ch1 = written[1]
    looks = build_bible(ch1, after)
    assert all(looks[c.id].appearance == edited[c.id] for c in ch1.characters)
