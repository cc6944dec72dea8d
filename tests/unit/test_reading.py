"""The reading of a chapter (``mangaka/source/evidence.py``, ``heading.py``, ``reading.py``): who
speaks with the evidence and how sure, the title from the heading, the reading file and a person's
corrections of it, and ``python -m mangaka read``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mangaka.cli.main import main
from mangaka.errors import InputError
from mangaka.evaluate.goldset import load_gold_set
from mangaka.names import name_match
from mangaka.source import source_map
from mangaka.source.heading import heading
from mangaka.source.reading import corrections, load_corrections, reading_json, reading_text
from tests.unit.source_checks import check_map

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"
GOLD = ROOT / "mangaka" / "evaluate" / "gold"


def speakers(text: str, lang: str = "en") -> list[tuple[str | None, str | None, bool]]:
    return [(q.hint, q.evidence, q.sure) for q in check_map(text, lang).quotes]


# ---- who speaks ----


def test_the_demo_chapter_says_who_speaks_every_line():
    """The old man says "We're closed" (the one person the paragraph names), "What do you want,
    girl?" (his beat) and "Sit down" ("he said": the one man the narration before names)."""
    assert speakers(DEMO.read_text(encoding="utf-8")) == [
        ("the old man", "beat", True),
        ("Mei", "attribution", True),
        ("the old man", "beat", True),
        ("Mei", "beat", True),
        ("the old man", "pronoun", True),
        ("the old man", "continuation", True),
    ]


def test_an_action_beat_of_one_person_settles_the_line_and_two_people_leave_it_open():
    lead = "The lamp was out, and Ada knelt. Then Tobias came, and Ada stood.\n\n"
    assert speakers(lead + 'Ada crouched by the lamp. "Look at this."') == [("Ada", "beat", True)]
    two = speakers(lead + 'Ada looked at Tobias. "Look at this."')
    assert two[0][2] is False  # two people act: a guess at most
    # A possessive is not a person acting: "the keeper's niece" is Pip's beat.
    text = 'Pip sat by Tobias. Tobias waited.\n\nIt was Pip, Tobias\'s niece. "I saw a light."'
    assert speakers(text)[-1] == ("Pip", "beat", True)


def test_a_pronoun_attribution_is_the_one_person_of_that_pronoun_named_before():
    text = (
        "In came Mei. She shook her umbrella. Then Mei smiled. She sat down.\n\n"
        "Behind the desk, Hollis looked up. He put down his brush. Then Hollis sighed. He stood.\n\n"
        '"Sit," he said.'
    )
    assert speakers(text) == [("Hollis", "pronoun", True)]
    both = text.replace('"Sit," he said.', 'Mei waited, and Hollis frowned.\n\n"Thanks," she said.')
    assert speakers(both) == [("Mei", "pronoun", True)]
    # A person the line speaks to is not the one speaking it.
    spoken_to = both.replace('"Thanks," she said.', '"Mei, sit," he said.')
    assert speakers(spoken_to) == [("Hollis", "pronoun", True)]
    # Nobody of that pronoun named since the paragraph before: no answer.
    assert speakers(text.replace('"Sit," he said.', '"Thanks," she said.'))[0][2] is False


def test_a_paragraph_is_one_speakers_turn():
    text = 'Rain fell.\n\n"Come in," said Mei. "Sit down. Have some tea."'
    assert speakers(text) == [("Mei", "attribution", True), ("Mei", "continuation", True)]


def test_chinese_beats_attributions_and_pronouns():
    text = (
        "林晚推开门。她把伞放下。林晚坐下。她笑了。\n\n"
        "周屿抬起头。他打了个哈欠。周屿站起来。他走了。\n\n“走吧。”他说。"
    )
    assert speakers(text, "zh") == [("周屿", "pronoun", True)]
    assert speakers("雨停了。沈青衣进门。\n\n沈青衣放下茶杯：“你来了。”", "zh") == [("沈青衣", "beat", True)]


def test_a_pronoun_reaches_past_a_run_of_dialogue_and_a_subject_pronoun_is_an_attribution():
    people = "林晚推开门。她把伞放下。林晚坐下。她笑了。\n\n"
    people += "周屿抬起头。他打了个哈欠。周屿站起来。他坐下。\n\n"
    text = people + "“什么东西？”\n\n“伞。”\n\n“不是我的。”他打了个哈欠，“我从来不带伞。”"
    assert speakers(text, "zh")[-2:] == [("周屿", "pronoun", True)] * 2
    # A narration-only paragraph naming no one but "she": a guess at the woman named before.
    poke = people + "她用笔帽戳了戳他的后背。\n\n“喂，这是你的吗？”"
    assert speakers(poke, "zh") == [("林晚", "lead-in", False)]


def test_no_guess_names_the_person_the_line_speaks_to():
    text = (
        "Then Tom sorted the mail.\n\nMrs. Abernathy opened the door. Mrs. Abernathy looked hard at Tom.\n\n"
        '"Tom, did you bring them?"'
    )
    assert speakers(text) == [("Mrs. Abernathy", "lead-in", False)]
    korean = source_map('지수가 문을 열었다. 지수가 웃었다. 민호가 앉았다.\n\n"민호야, 들어와."', "ko")
    assert korean.quotes[0].hint == "지수"


def test_a_line_no_other_rule_reaches_goes_to_the_one_who_answers():
    """Neither the person the line speaks to nor the one who spoke the line before: the latest other
    speaker, else the latest other person the narration named (a guess, ``other``)."""
    text = (
        "Detective Ruiz laid a newspaper on the counter.\n\nBehind the desk, Tom sorted the mail. Tom "
        'had not looked up.\n\n"You know why I\'m here," Detective Ruiz said.\n\n"Because of the mayor?"'
        '\n\n"Because of the briefcase."'
    )
    assert speakers(text) == [
        ("Detective Ruiz", "attribution", True), ("Tom", "other", False), ("Detective Ruiz", "turn", False),
    ]  # fmt: skip
    french = (
        "Émile surveillait le four. Derrière lui, Juliette pétrissait la pâte. Puis Juliette ouvrit un "
        "sac : une enveloppe portait un seul mot, Émile.\n\n— Monsieur Émile, il y avait ça dans le sac."
        "\n\nIl prit l'enveloppe.\n\n— C'est Lucie qui l'a écrite.\n\n— Lucie ?"
    )
    assert [(q.hint, q.evidence, q.sure) for q in source_map(french, "fr").quotes] == [
        ("Juliette", "lead-in", False), ("Émile", "other", False), ("Juliette", "turn", False),
    ]  # fmt: skip


def test_a_japanese_line_is_attributed_by_the_paragraph_after_it():
    text = (
        "祖父の源蔵がカウンターにいた。千尋は皿を運んでいた。\n\n「先生、落ち着いてください」\n\n"
        "千尋が尋ねると、佐伯先生は頭をかいた。\n\n「ない！」\n\n陽太の声は震えていた。"
    )
    assert speakers(text, "ja") == [("千尋", "attribution", True), ("陽太", "attribution", True)]
    # A paragraph after that opens with another line, or with no speech verb, attributes nothing.
    assert speakers(text.replace("千尋が尋ねると", "千尋が座ると"), "ja")[0][2] is False


def test_read_on_every_gold_chapter_gets_its_language_title_and_speakers(tmp_path: Path):
    """``read --json`` on each chapter of the built-in gold set, as a user runs it (language auto):
    the language and title are the gold's, every spoken quote is there, and every speaker the
    reading settles is the gold speaker (a name of the gold character or one of its aliases); the
    reading settles at least a quarter of the set's lines."""
    sure = right = total = 0
    for case in load_gold_set():
        out = tmp_path / f"{case.id}.reading.json"
        assert main(["read", str(GOLD / f"{case.id}.txt"), "--json", "-o", str(out)]) == 0
        data = json.loads(out.read_text(encoding="utf-8"))
        assert (data["language"], data["title"]) == (case.gold.language, case.gold.title), case.id
        spoken = [q for q in data["quotes"] if q["kind"] == "speech"]
        assert [q["text"] for q in spoken] == [q.text for q in case.gold.quotes], case.id
        for q, gq in zip(spoken, case.gold.quotes, strict=True):
            total += 1
            if not q["sure"] or gq.speaker is None:
                continue
            sure += 1
            gold = case.gold.character(gq.speaker)
            right += name_match(q["speaker"], [gold.name, *gold.aliases], case.gold.language) > 0
    assert sure >= total // 4 and right == sure, (right, sure, total)


# ---- the title ----


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Chapter 1: The Lantern Shop\n\nRain fell.", "Chapter 1: The Lantern Shop"),
        ("CHAPTER I\n\nThe Letter\n\nIt came on a Monday.", "CHAPTER I: The Letter"),
        ("第十二話　雪の駅\n\n雪が降っていた。", "第十二話　雪の駅"),
        ("第七章 雨夜\n雨下了一夜。", "第七章 雨夜"),
        ("第一章\n\n雨夜\n\n雨下了一夜。", "第一章　雨夜"),
        ("제3화 비 오는 날\n\n비가 왔다.", "제3화 비 오는 날"),
        ("Chapitre 2 — Le port\n\n— Tu viens ? demanda-t-il.", "Chapitre 2 — Le port"),
        ("Глава 5\n\nБыло холодно.", "Глава 5"),
        ("Prologue\n\nThe sea was calm that night.", "Prologue"),
        ("Rain fell on Kiri Lane.\n\nMei came in.", None),
        ('"We\'re closed," said a voice.', None),
        ("Chapter one of my life began when I was born, as many lives do.\n\nx", None),
    ],
)
def test_the_title_is_the_chapters_heading_verbatim(text: str, title: str | None):
    assert heading(text) == title


def test_every_gold_chapters_heading_is_its_gold_title():
    for case in load_gold_set():
        assert source_map(case.text, case.gold.language).title == case.gold.title, case.id


# ---- the reading file and a person's corrections ----


def test_the_reading_file_names_every_quote_with_its_speaker_and_evidence():
    m = source_map(DEMO.read_text(encoding="utf-8"), "en")
    data = reading_json(m)
    assert data["title"] == "Chapter 1: The Lantern Shop" and data["language"] == "en"
    assert [q["speaker"] for q in data["quotes"]][:3] == ["the old man", "Mei", "the old man"]
    assert {n["name"]: n["aliases"] for n in data["names"]} == {"Mei": [], "the old man": ["an old man"]}
    assert data["scenes"] == [{"first_paragraph": 1, "last_paragraph": 8}]
    assert json.loads(json.dumps(data)) == data
    assert "the old man [pronoun, sure]: Sit down," in reading_text(m)


def test_a_persons_corrections_are_forced_and_the_rest_is_kept():
    m = source_map(DEMO.read_text(encoding="utf-8"), "en")
    data = reading_json(m)
    data["quotes"][0]["speaker"] = "a voice"  # a person who is not in the names yet
    data["quotes"][1]["speaker"] = None  # leave it to the model
    data["names"] = [{"name": "Mei"}, {"name": "the old man"}]
    data["title"] = "The Lantern Shop"
    fixed = corrections(data, m).apply(m)
    assert [(q.hint, q.evidence, q.sure) for q in fixed.quotes[:3]] == [
        ("a voice", "person", True),
        (None, None, False),
        ("the old man", "beat", True),
    ]
    assert [c.name for c in fixed.names] == ["Mei", "the old man", "a voice"]
    assert fixed.title == "The Lantern Shop"
    assert corrections(reading_json(m), m).apply(m) == m  # nothing changed: the same reading


def _refused(data: object, m, field: str) -> None:
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        corrections(data, m)


def test_hostile_readings_are_refused_naming_the_field():
    m = source_map(DEMO.read_text(encoding="utf-8"), "en")
    good = reading_json(m)

    def bad(**change: object) -> dict:
        data = copy.deepcopy(good)
        data.update(change)
        return data

    _refused([], m, "reading")
    _refused(bad(reading=7), m, "reading")
    _refused(bad(chapter={"sha256": "0" * 64}), m, "chapter.sha256")
    other = source_map('Chapter 2\n\nAnother chapter. "Hi," said Ada.', "en")
    _refused(reading_json(other), m, "chapter.sha256")  # another chapter's reading
    _refused(bad(language="zh"), m, "language")
    _refused(bad(names="Mei"), m, "names")
    _refused(bad(names=[{"name": ""}]), m, r"names[0].name")
    _refused(bad(names=[{"name": "x" * 500}]), m, r"names[0].name")
    quotes = copy.deepcopy(good["quotes"])
    quotes[0]["number"] = 99
    _refused(bad(quotes=quotes), m, "quotes[0].number")
    quotes = copy.deepcopy(good["quotes"])
    quotes[2]["number"] = True
    _refused(bad(quotes=quotes), m, "quotes[2].number")
    quotes = copy.deepcopy(good["quotes"])
    quotes[1]["text"] = "Something else"
    _refused(bad(quotes=quotes), m, "quotes[1].text")
    quotes = copy.deepcopy(good["quotes"])
    quotes[1]["speaker"] = 3
    _refused(bad(quotes=quotes), m, "quotes[1].speaker")
    _refused(bad(quotes={}), m, "quotes")
    _refused(bad(title=""), m, "title")


def test_a_reading_file_that_is_not_json_or_missing_is_refused(tmp_path: Path):
    m = source_map(DEMO.read_text(encoding="utf-8"), "en")
    with pytest.raises(InputError, match="does not exist"):
        load_corrections(tmp_path / "none.json", m)
    (tmp_path / "bad.json").write_bytes(b"\xff{")
    with pytest.raises(InputError, match="not UTF-8 JSON"):
        load_corrections(tmp_path / "bad.json", m)
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InputError, match="nested too deeply"):
        load_corrections(tmp_path / "deep.json", m)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab. "“”「」,\n—«»HeShe说她他'))))
def test_any_text_reads_back_into_its_own_reading(text: str):
    """Whatever the chapter, its reading file is JSON whose corrections change nothing."""
    for lang in ("en", "zh"):
        m = source_map(text, lang)
        data = json.loads(json.dumps(reading_json(m)))
        assert corrections(data, m).apply(m) == m
        assert all(q.sure <= (q.hint is not None) for q in m.quotes)


# ---- the command ----


def test_read_prints_the_reading_and_writes_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["read", str(DEMO)]) == 0
    shown = capsys.readouterr().out
    assert "title: Chapter 1: The Lantern Shop" in shown
    assert "6 with a speaker the text settles" in shown
    out = tmp_path / "demo.reading.json"
    assert main(["read", str(DEMO), "--json", "-o", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["quotes"][2]["speaker"] == "the old man"
    assert main(["read", str(tmp_path / "missing.txt")]) == 1
    with pytest.raises(SystemExit):
        main(["read", str(DEMO), "--language", "xx"])


def test_write_refuses_a_bad_reading_before_any_model_loads(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """A reading of another chapter, passed to ``write``, is refused naming the field; the model
    (here a file that is no model at all) is never opened."""
    other = tmp_path / "other.reading.json"
    assert main(["read", str(GOLD / "en1.txt"), "--json", "-o", str(other)]) == 0
    not_a_model = tmp_path / "model.gguf"
    not_a_model.write_bytes(b"GGUF" + bytes(60))
    code = main(
        [
            "write",
            str(DEMO),
            "--model",
            str(not_a_model),
            "--reading",
            str(other),
            "-o",
            str(tmp_path / "x.json"),
        ]
    )
    assert code == 1
    assert "reading: chapter.sha256: this reading is of another chapter" in caplog.text
    assert not (tmp_path / "x.json").exists()
