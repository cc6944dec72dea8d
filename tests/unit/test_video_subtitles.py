"""Subtitles (SRT, ASS, burned captions) and the voice script of a motion comic's timeline: real
fonts, real Pillow, the golden screenplays."""

from __future__ import annotations

import csv
import io
import itertools
import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mangaka.errors import InputError
from mangaka.screenplay.bible import SeriesBible
from mangaka.screenplay.validate import screenplay_model
from mangaka.video.options import SIZES
from mangaka.video.subtitles import (
    PALETTE,
    Burner,
    Caption,
    ass,
    ass_text,
    safe_area,
    srt,
    write_subtitles,
)
from mangaka.video.timeline import Cue, Timeline, build_timeline
from mangaka.video.voice import (
    CSV_COLUMNS,
    voice_rows,
    voice_script_csv,
    voice_script_text,
    voices_from_bible,
    write_voice_script,
)

DATA = Path(__file__).parent / "data"
GOLDEN = {"en": "golden_screenplay.json", "zh": "golden_screenplay.zh.json"}
LONG_EN = " ".join(["Hurry, girl, the river never waits for anyone who hesitates at the pier."] * 6)[:400]
LONG_ZH = ("快点姑娘，河水可不等人。最后一班渡船在黄昏时分离岸，" * 6)[:150]


def screenplay(language: str):
    return screenplay_model(json.loads((DATA / GOLDEN[language]).read_text(encoding="utf-8")))


def timeline(language: str, voices: dict[str, str] | None = None) -> Timeline:
    return build_timeline(screenplay(language), voices=voices)


def with_texts(tl: Timeline, texts: dict[int, str]) -> Timeline:
    """``tl`` with the text of the cues at the given places (in ``tl.cues()`` order) replaced, checked."""
    data = tl.to_json()
    cues = [c for shot in data["shots"] for c in shot["cues"]]
    for index, text in texts.items():
        cues[index]["text"] = text
    return Timeline.model_validate(data)


def parse_srt(text: str) -> list[tuple[int, int, int, str]]:
    """(number, start ms, end ms, text) per entry."""
    stamp = re.compile(r"^(\d\d):(\d\d):(\d\d),(\d{3}) --> (\d\d):(\d\d):(\d\d),(\d{3})$")
    entries = []
    for block in text.strip("\n").split("\n\n"):
        number, times, *body = block.split("\n")
        match = stamp.match(times)
        assert match, times
        h1, m1, s1, ms1, h2, m2, s2, ms2 = (int(g) for g in match.groups())
        start = ((h1 * 60 + m1) * 60 + s1) * 1000 + ms1
        end = ((h2 * 60 + m2) * 60 + s2) * 1000 + ms2
        assert body and all(line.strip() for line in body), block
        entries.append((int(number), start, end, "\n".join(body)))
    return entries


def dialogues(text: str) -> list[list[str]]:
    """Each Dialogue line's ten fields."""
    lines = [line for line in text.splitlines() if line.startswith("Dialogue: ")]
    return [line[len("Dialogue: ") :].split(",", 9) for line in lines]


def styles(text: str) -> dict[str, list[str]]:
    lines = [line for line in text.splitlines() if line.startswith("Style: ")]
    return {fields[0]: fields for fields in (line[len("Style: ") :].split(",") for line in lines)}


# --- SRT ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh"])
def test_srt_parses_back_to_the_cues(language):
    tl = timeline(language)
    entries = parse_srt(srt(tl))
    assert [e[0] for e in entries] == list(range(1, len(tl.cues()) + 1))
    assert [(e[1], e[2], e[3]) for e in entries] == [
        (round(c.start * 1000), round(c.end * 1000), c.text) for c in tl.cues()
    ]


def test_srt_keeps_a_texts_lines_but_no_blank_line():
    tl = with_texts(timeline("en"), {0: "One.\n\n  Two.\r\nThree.\u2028Four."})
    assert parse_srt(srt(tl))[0][3] == "One.\nTwo.\nThree.\nFour."
    assert srt(tl).endswith("\n") and "\n\n\n" not in srt(tl)


# --- ASS ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh"])
def test_ass_has_a_dialogue_per_cue_and_a_style_per_speaker(language):
    tl = timeline(language)
    text = ass(tl, SIZES["1080x1920"])
    assert "PlayResX: 1080\nPlayResY: 1920" in text
    assert "WrapStyle: 0" in text and "ScaledBorderAndShadow: yes" in text
    cues = tl.cues()
    events = dialogues(text)
    assert len(events) == len(cues)
    assert [e[4] for e in events] == [c.name for c in cues]
    assert [e[9] for e in events] == [c.text for c in cues]
    assert events[0][1] == f"0:00:{cues[0].start:05.2f}"
    found = styles(text)
    speakers = {c.speaker: c.name or c.speaker for c in cues}
    assert set(found) == {"Default", *speakers.values()}
    assert [e[3] for e in events] == [speakers[c.speaker] for c in cues]
    family = "Noto Sans CJK SC" if language == "zh" else "Noto Sans CJK JP"
    assert {s[1] for s in found.values()} == {family}
    assert found["narrator"][8] == "-1" and found[speakers["lin"]][8] == "0"
    colours = [s[3] for name, s in found.items() if name not in ("Default", "narrator")]
    assert len(set(colours)) == len(colours) and all(s[18] == "2" for s in found.values())
    expected = "&H00" + PALETTE[0][4:] + PALETTE[0][2:4] + PALETTE[0][:2]
    assert found[speakers[next(c.speaker for c in cues if c.speaker != "narrator")]][3] == expected
    assert text == ass(timeline(language), SIZES["1080x1920"])  # deterministic


@pytest.mark.parametrize("size", list(SIZES.values()))
def test_ass_margins_are_the_burned_safe_area(size):
    left, _, right, bottom = safe_area(size)
    style = styles(ass(timeline("en"), size))["Default"]
    assert style[19:22] == [str(left), str(size[0] - right), str(size[1] - bottom)]
    assert int(style[2]) > 0


def test_a_hostile_line_cannot_make_an_ass_override_tag():
    hostile = r"{\pos(0,0)\c&H0000FF&}Gotcha} \N{\fs200}big\ {" + "\nnext line \\"
    tl = with_texts(timeline("en"), {0: hostile, 1: "\\leading backslash"})
    events = dialogues(ass(tl, SIZES["1920x1080"]))
    assert len(events) == len(tl.cues())
    for event in events[:2]:
        body = event[9].replace(r"\N", "")
        assert not set(body) & set("{}\\"), event[9]
    assert events[0][9].count(r"\N") == 1  # the text's own line break, not its literal "\N"
    assert "Gotcha" in events[0][9] and "big" in events[0][9]
    assert ass_text("a,b\n\nc") == r"a,b\Nc"


def test_hostile_names_stay_in_their_fields():
    tl = timeline("en")
    data = tl.to_json()
    for shot in data["shots"]:
        for cue in shot["cues"]:
            if cue["speaker"] == "lin":
                cue["name"] = "Lin, {\\b1}*Default"
    text = ass(Timeline.model_validate(data), SIZES["1080x1080"])
    assert all(len(e) == 10 for e in dialogues(text))
    names = list(styles(text))
    assert len(names) == len({n.casefold() for n in names}) and names[0] == "Default"
    assert not any(set(n) & set("{}\\,") for n in names)


# --- burned captions ---------------------------------------------------------------------------


def test_the_safe_area_keeps_clear_of_short_video_buttons():
    width, height = SIZES["1080x1920"]
    left, _, right, bottom = safe_area((width, height))
    assert height - bottom >= 0.19 * height and left >= 0.07 * width and width - right == left
    for size in (SIZES["1920x1080"], SIZES["1080x1080"]):
        left, _, right, bottom = safe_area(size)
        assert 0.05 * size[1] <= size[1] - bottom <= 0.1 * size[1] and 0 < left < right < size[0]


def check_pages(caps: list[Caption], cue: Cue, frame: tuple[int, int]) -> None:
    left, top, right, bottom = safe_area(frame)
    assert len(caps) >= 2
    assert caps[0].start == cue.start and caps[-1].end == cue.end
    for before, after in itertools.pairwise(caps):
        assert before.end == after.start
    for cap in caps:
        assert cap.end > cap.start
        assert 1 <= len(cap.text.split("\n")) <= 2
        assert cap.image.mode == "RGBA"
        assert left <= cap.x and cap.x + cap.image.width <= right <= frame[0]
        assert top <= cap.y and cap.y + cap.image.height == bottom <= frame[1]
        middle = cap.x + cap.image.width / 2
        assert abs(middle - frame[0] / 2) <= 0.05 * frame[0]
    assert "".join("".join(c.text.split()) for c in caps) == "".join(cue.text.split())
    lengths = [len("".join(c.text.split())) for c in caps]
    shares = [(c.end - c.start) / (cue.end - cue.start) for c in caps]
    for length, share in zip(lengths, shares, strict=True):
        assert share == pytest.approx(length / sum(lengths), abs=0.01)


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize(("language", "text"), [("en", LONG_EN), ("zh", LONG_ZH)])
def test_a_long_line_is_shown_in_pages_of_two_lines(language, text, size):
    frame = SIZES[size]
    cue = timeline(language).cues()[1]
    cue = cue.model_copy(update={"text": text, "end": cue.start + 12.0})
    caps = Burner(language, frame).captions(cue)
    check_pages(caps, cue, frame)
    assert len(caps) >= (3 if language == "en" or size == "1080x1920" else 2)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_caption_is_white_text_on_a_dark_outline(language):
    frame = SIZES["1080x1920"]
    burner = Burner(language, frame)
    for cue in timeline(language).cues():
        (cap,) = burner.captions(cue)
        assert (cap.start, cap.end) == (cue.start, cue.end) and cap.text == cue.text
        pixels = np.asarray(cap.image).reshape(-1, 4)
        opaque = pixels[pixels[:, 3] == 255, :3]
        assert (opaque.min(axis=1) >= 230).sum() > 50 and (opaque.max(axis=1) <= 40).sum() > 50
        alpha = cap.image.getchannel("A")
        assert alpha.getbbox() == (0, 0, *cap.image.size)  # tight around the ink
        frame_image = Image.new("RGBA", frame, (128, 128, 128, 255))
        frame_image.alpha_composite(cap.image, (cap.x, cap.y))
    assert not any(isinstance(v, Image.Image | list | dict) for v in vars(burner).values() if v)


def test_missing_glyphs_are_named_once(caplog):
    burner = Burner("en", SIZES["1920x1080"])
    cue = timeline("en").cues()[0].model_copy(update={"text": "Look \U0001f600 there"})
    with caplog.at_level(logging.WARNING, logger="mangaka"):
        assert len(burner.captions(cue)) == 1
        burner.captions(cue)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "U+1F600" in warnings[0]


def test_a_blank_text_has_no_caption_and_bad_frames_are_refused():
    cue = timeline("en").cues()[0].model_copy(update={"text": " \n "})
    assert Burner("en", SIZES["1080x1080"]).captions(cue) == []
    for bad in ((0, 100), (100,), ("wide", 9)):
        with pytest.raises(InputError, match="frame_size"):
            safe_area(bad)
    with pytest.raises(InputError, match="frame_size"):
        ass(timeline("en"), (99999, 1080))


def test_write_subtitles_writes_both_files(tmp_path):
    tl = timeline("zh")
    paths = write_subtitles(tl, SIZES["1080x1920"], tmp_path / "chapter.1")
    assert [p.name for p in paths] == ["chapter.1.srt", "chapter.1.ass"]
    assert paths[0].read_text(encoding="utf-8") == srt(tl)
    assert paths[1].read_text(encoding="utf-8-sig") == ass(tl, SIZES["1080x1920"])


# --- the voice script --------------------------------------------------------------------------


def test_the_csv_round_trips_any_text_and_guards_formulas():
    texts = {
        0: 'He said, "stop" — then\nleft, quietly.',
        1: '=HYPERLINK("http://x","y")',
        2: "-Wait, what?",
        3: "+1 for the ferry",
        4: "@everyone, run",
    }
    tl = with_texts(timeline("en"), texts)
    rows = list(csv.reader(io.StringIO(voice_script_csv(tl), newline="")))
    assert rows[0] == list(CSV_COLUMNS)
    assert len(rows) == len(tl.cues()) + 1
    got = [row[5] for row in rows[1:]]
    assert got[0] == texts[0]
    assert got[1:5] == ["'" + texts[i] for i in (1, 2, 3, 4)]
    assert [row[:5] for row in rows[1:]] == [
        [c.line, c.speaker, c.name, c.emotion, c.voice] for c in tl.cues()
    ]


def test_the_text_script_is_one_line_per_cue():
    tl = with_texts(timeline("en"), {0: "Two\nlines  here."})
    lines = voice_script_text(tl).splitlines()
    assert lines == ["Two lines here.", *(c.text for c in tl.cues()[1:])]


def test_bible_voices_reach_the_rows(tmp_path):
    bible = SeriesBible.model_validate(
        {
            "version": 1,
            "characters": [
                {"id": "lin", "name": "Lin", "voice": "zh-female-young"},
                {"id": "old_tan", "name": "Old Tan", "voice": " old-man "},
                {"id": "kid", "name": "Xiaobao"},
            ],
        }
    )
    voices = voices_from_bible(bible)
    assert voices == {"lin": "zh-female-young", "old_tan": "old-man"}
    tl = timeline("en", voices)
    rows = voice_rows(tl)
    assert [r["line"] for r in rows] == [c.line for c in tl.cues()]
    expected = {"lin": "zh-female-young", "old_tan": "old-man", "kid": "", "narrator": ""}
    assert all(r["voice"] == expected[r["speaker"]] for r in rows)
    assert all(r["seconds"] == pytest.approx(c.end - c.start) for r, c in zip(rows, tl.cues(), strict=True))
    path = write_voice_script(tl, tmp_path / "ch1")
    assert path.name == "ch1.voice.csv"
    written = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))
    assert [r["voice"] for r in written] == [r["voice"] for r in rows]
