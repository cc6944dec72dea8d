"""``python -m mangaka dataset``: the gold set's reference screenplays as approved pairs; the
examples carry exactly the messages the Screenwriter sends, and their targets write the same
screenplay back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mangaka.cli.main import main
from mangaka.dataset import build_dataset, chapter_language, examples, find_pairs, request_for
from mangaka.errors import InputError
from mangaka.screenplay import write_screenplay
from mangaka.screenplay.models import SCREENPLAY_VERSION
from tests.fakes import FakeScriptedLLM

GOLD = Path(__file__).resolve().parents[2] / "mangaka" / "evaluate" / "gold"
NAMES = ["en1", "en2", "en3", "zh1", "zh2", "zh3", "ja1", "ja2", "ja3"]


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    folder = tmp_path / "approved"
    folder.mkdir()
    for name in NAMES:
        shutil.copy(GOLD / f"{name}.txt", folder / f"{name}.txt")
        shutil.copy(GOLD / f"{name}.reference.json", folder / f"{name}.json")
    return folder


@pytest.mark.parametrize("name", NAMES)
def test_each_example_is_what_the_screenwriter_sends_and_its_targets_write_the_screenplay_back(pairs, name):
    pair = next(p for p in find_pairs(pairs) if p.name == name)
    cast, script = examples(pair)
    llm = FakeScriptedLLM(cast["messages"][-1]["content"], script["messages"][-1]["content"], n_ctx=200_000)
    result = write_screenplay(llm, pair.chapter, request_for(pair.screenplay))
    assert [call["messages"] for call in llm.calls] == [cast["messages"][:-1], script["messages"][:-1]]
    # the gold references are version 1; a screenplay is written as version 2, which in the free format
    # (no quote or source known) differs from version 1 only in that number, as examples() compares it
    assert pair.screenplay.version == 1 and result.screenplay.version == SCREENPLAY_VERSION == 2
    assert result.screenplay.model_copy(update={"version": 1}) == pair.screenplay
    assert result.repairs == []
    assert [m["role"] for m in script["messages"]] == ["system", "user", "user", "assistant"]


def test_the_command_writes_a_split_set_with_its_card(pairs, tmp_path):
    out = tmp_path / "set"
    assert main(["dataset", str(pairs), "-o", str(out), "--val", "0.25"]) == 0
    train = [json.loads(line) for line in (out / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    val = [json.loads(line) for line in (out / "val.jsonl").read_text(encoding="utf-8").splitlines()]
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    assert card["pairs"] == 9 and card["languages"] == {"en": 3, "zh": 3, "ja": 3}
    assert card["examples"] == {"train": len(train), "val": len(val)} and len(val) == 4  # 2 pairs × 2 calls
    assert card["calls"] == {"cast": 9, "script": 9}
    assert {e["source"] for e in train}.isdisjoint({e["source"] for e in val})  # whole pairs per split
    assert {s["name"] for s in card["sources"]} == set(NAMES)
    # the same folder again: the same split; the output already holds a set: refused
    again = tmp_path / "again"
    assert main(["dataset", str(pairs), "-o", str(again), "--val", "0.25"]) == 0
    assert (again / "val.jsonl").read_text(encoding="utf-8") == (out / "val.jsonl").read_text(
        encoding="utf-8"
    )
    assert main(["dataset", str(pairs), "-o", str(out)]) == 1


def test_a_pair_listed_twice_is_kept_once(pairs):
    shutil.copy(pairs / "en1.txt", pairs / "en1-copy.txt")
    shutil.copy(pairs / "en1.json", pairs / "en1-copy.json")
    data = build_dataset(find_pairs(pairs))
    assert data.card["pairs"] == 9 and data.card["duplicates_dropped"] == 1


def test_bad_pairs_are_refused_by_name_before_anything_is_written(pairs, tmp_path, caplog):
    out = tmp_path / "set"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"has no pairs: put each chapter as NAME\.txt"):
        find_pairs(empty)
    (pairs / "zh1.json").write_bytes((GOLD / "en1.reference.json").read_bytes())
    with pytest.raises(InputError, match=r"zh1.json is in 'en', but its chapter zh1.txt reads as 'zh'"):
        find_pairs(pairs)
    (pairs / "zh1.json").write_text('{"version": 1, "title": ""}', encoding="utf-8")
    assert main(["dataset", str(pairs), "-o", str(out)]) == 1
    assert "zh1.json is not a valid screenplay" in caplog.text
    assert not out.exists()


def test_chapter_language():
    assert chapter_language((GOLD / "en1.txt").read_text(encoding="utf-8")) == "en"
    assert chapter_language((GOLD / "zh1.txt").read_text(encoding="utf-8")) == "zh"
    assert chapter_language((GOLD / "ja1.txt").read_text(encoding="utf-8")) == "ja"


def _all_pairings() -> list[tuple[str, str]]:
    return [(a, b) for a in NAMES for b in NAMES if a[:2] == b[:2]]


@pytest.mark.parametrize(("chapter", "screenplay"), _all_pairings())
def test_a_screenplay_of_another_chapter_is_refused(tmp_path, chapter, screenplay):
    """Every gold chapter with every screenplay of its language: its own is taken, each other
    one (the slip of pairing chapter 2's screenplay with chapter 1) refused, naming both files."""
    folder = tmp_path / "approved"
    folder.mkdir()
    shutil.copy(GOLD / f"{chapter}.txt", folder / "ch.txt")
    shutil.copy(GOLD / f"{screenplay}.reference.json", folder / "ch.json")
    if chapter == screenplay:
        assert [p.name for p in find_pairs(folder)] == ["ch"]
        return
    refused = r"ch\.json does not look like a screenplay of ch\.txt: it keeps 0 of"
    with pytest.raises(InputError, match=refused):
        find_pairs(folder)


def test_without_dialogue_the_names_decide(tmp_path):
    sp = json.loads((GOLD / "en1.reference.json").read_text(encoding="utf-8"))
    sp["dialogue"] = []
    for panel in sp["panels"]:
        panel["dialogue"] = []
    folder = tmp_path / "approved"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(sp), encoding="utf-8")
    shutil.copy(GOLD / "en1.txt", folder / "a.txt")
    assert len(find_pairs(folder)) == 1  # its cast is named in its chapter
    shutil.copy(GOLD / "en2.txt", folder / "a.txt")
    with pytest.raises(InputError, match=r"none of its 4 character names \(.*\) appear in the chapter"):
        find_pairs(folder)
