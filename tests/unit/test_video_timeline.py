"""The motion comic's timeline and camera (mangaka/video/timeline.py, camera.py): each line's
length from its voice or its reading time, shots from panels (cut past max_shot), moves chosen
from shot and angle, every camera window inside its picture, and a timeline's JSON checked when
it comes back edited."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mangaka.errors import InputError
from mangaka.screenplay.validate import screenplay_model
from mangaka.video.camera import MAX_AMOUNT, MOVES, choose_move, window
from mangaka.video.options import TimingOptions, timing_from
from mangaka.video.timeline import (
    LEAD_IN,
    LEAD_OUT,
    MIN_LINE,
    build_timeline,
    reading_seconds,
    spoken_order,
    timeline_from_json,
)

DATA = Path(__file__).parent / "data"


def _sp(name: str = "golden_screenplay.json"):
    return screenplay_model(json.loads((DATA / name).read_text(encoding="utf-8")))


def test_reading_time_counts_characters_for_cjk_and_words_for_the_rest():
    timing = TimingOptions(chars_per_second=5.0, words_per_second=2.0)
    assert reading_seconds("一二三四五六七八九十", timing) == 2.0  # 10 characters at 5 a second
    assert reading_seconds("안녕하세요 여러분", timing) == pytest.approx(8 / 5)  # Hangul counts by syllable
    assert reading_seconds("one two three four five six", timing) == 3.0  # 6 words at 2 a second
    assert reading_seconds("Он сказал: «Нет, никогда!»", timing) == 2.0  # Cyrillic by words, marks are free
    assert reading_seconds("OK", timing) == MIN_LINE  # at least MIN_LINE
    assert reading_seconds("我说 OK 了", timing) == pytest.approx(max(MIN_LINE, 3 / 5 + 1 / 2))  # mixed


def test_shots_follow_the_panels_and_lines_their_voices():
    sp = _sp()
    voiced = {"d1": 4.25, "d3": 0.6}
    timeline = build_timeline(sp, voice_seconds=voiced)
    assert [s.panel for s in timeline.shots] == [p.id for p in sp.panels]
    cues = {c.line: c for c in timeline.cues()}
    assert cues["d1"].end - cues["d1"].start == pytest.approx(4.25)  # the clip's length, not reading time
    assert cues["d3"].end - cues["d3"].start == pytest.approx(0.6)  # a voice shorter than MIN_LINE is kept
    first = timeline.shots[0]
    assert first.cues[0].start == pytest.approx(first.start + LEAD_IN)
    assert first.end == pytest.approx(max(2.0, LEAD_IN + 4.25 + LEAD_OUT))
    assert [c.line for c in timeline.cues()] == spoken_order(sp)
    assert timeline.duration == timeline.shots[-1].end


def test_a_speaker_change_pauses_and_a_panel_without_lines_is_a_beat():
    data = json.loads((DATA / "golden_screenplay.json").read_text(encoding="utf-8"))
    data["panels"][-1]["dialogue"] = []
    data["dialogue"] = [d for d in data["dialogue"] if any(d["id"] in p["dialogue"] for p in data["panels"])]
    sp = screenplay_model(data)
    timing = TimingOptions(pause=0.7, beat=3.5)
    timeline = build_timeline(sp, timing)
    last = timeline.shots[-1]
    assert last.cues == [] and last.end - last.start == pytest.approx(3.5)
    for shot in timeline.shots:
        for a, b in itertools.pairwise(shot.cues):
            gap = b.start - a.end
            assert gap == pytest.approx(0.7 if a.speaker != b.speaker else 0.15)


def test_a_panel_longer_than_max_shot_is_cut_into_shots_whose_move_runs_on():
    data = json.loads((DATA / "golden_screenplay.json").read_text(encoding="utf-8"))
    panel = data["panels"][2]
    assert len(panel["dialogue"]) >= 2
    sp = screenplay_model(data)
    timing = TimingOptions(min_shot=1.0, max_shot=3.0, words_per_second=1.0)
    timeline = build_timeline(sp, timing)
    parts = [s for s in timeline.shots if s.panel == panel["id"]]
    assert len(parts) >= 2
    assert parts[0].progress[0] == 0 and parts[-1].progress[1] == 1
    for a, b in itertools.pairwise(parts):
        assert a.progress[1] == b.progress[0] and a.move == b.move and a.end == b.start


def test_moves_come_from_shot_and_angle_and_the_seed():
    assert choose_move("close_up", "eye_level", 0, "p1") == "push_in"
    assert choose_move("medium", "low", 0, "p1") == "tilt_up"
    assert choose_move("wide", "high", 0, "p1") == "tilt_down"
    wide = {choose_move("wide", "eye_level", seed, "p1") for seed in range(40)}
    assert wide == {"pan", "pull_out"}  # the seed picks between the two a wide shot allows
    assert choose_move("wide", "eye_level", 7, "p3") == choose_move("wide", "eye_level", 7, "p3")


@settings(max_examples=200, deadline=None)
@given(
    move=st.sampled_from(MOVES),
    amount=st.floats(0, MAX_AMOUNT),
    direction=st.sampled_from(["rtl", "ltr"]),
    progress=st.floats(-0.5, 1.5),
    size=st.tuples(st.integers(32, 4000), st.integers(32, 4000)),
)
def test_every_window_lies_inside_its_picture_and_keeps_its_shape(move, amount, direction, progress, size):
    w = window(move, amount, direction, progress, size)
    assert -1e-6 <= w.left < w.right <= size[0] + 1e-6
    assert -1e-6 <= w.top < w.bottom <= size[1] + 1e-6
    assert (w.right - w.left) / (w.bottom - w.top) == pytest.approx(size[0] / size[1], rel=1e-6)
    assert (w.right - w.left) >= size[0] / (1 + MAX_AMOUNT) - 1e-6  # at least 83 % stays in view


def test_a_pan_runs_right_to_left_for_manga_and_left_to_right_for_comics():
    size = (1000, 800)
    rtl = [window("pan", 0.2, "rtl", p, size).left for p in (0, 0.5, 1)]
    ltr = [window("pan", 0.2, "ltr", p, size).left for p in (0, 0.5, 1)]
    assert rtl[0] > rtl[1] > rtl[2] and ltr[0] < ltr[1] < ltr[2]
    up = [window("tilt_up", 0.2, "rtl", p, size).top for p in (0, 1)]
    assert up[0] > up[1]  # tilting up: the window rises


def test_the_timeline_round_trips_through_json_and_an_edit_is_checked():
    timeline = build_timeline(_sp("golden_screenplay.zh.json"))
    data = json.loads(json.dumps(timeline.to_json(), ensure_ascii=False))
    assert timeline_from_json(data) == timeline
    data["shots"][1]["start"] += 1.0
    with pytest.raises(InputError, match=r"shots\[1\]\.start"):
        timeline_from_json(data)
    bad = timeline.to_json()
    bad["shots"][0]["cues"][0]["end"] = bad["shots"][0]["end"] + 5
    with pytest.raises(InputError, match=r"not inside its shot"):
        timeline_from_json(bad)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "must be a JSON object"),
        ({"shots": []}, "not a valid timeline"),
        ({"version": 2}, "version"),
    ],
)
def test_a_timeline_of_the_wrong_shape_is_refused_naming_what(data, match):
    with pytest.raises(InputError, match=match):
        timeline_from_json(data, "--timeline t.json")


def test_timing_options_are_checked_by_their_declarations():
    with pytest.raises(InputError, match="chars_per_second"):
        timing_from({"chars_per_second": 0})
    with pytest.raises(InputError, match="min_shot"):
        TimingOptions(min_shot=10, max_shot=5)
    with pytest.raises(InputError, match="direction"):
        timing_from({"direction": "vertical"})


def test_the_timeline_schema_is_current_and_a_built_timeline_meets_it(tmp_path):
    from jsonschema import Draft202012Validator

    from mangaka.video.timeline import TIMELINE_SCHEMA_FILE, timeline_schema_text, write_timeline_schema

    shipped = Path(__file__).parents[2] / "schemas" / TIMELINE_SCHEMA_FILE
    assert shipped.read_text(encoding="utf-8") == timeline_schema_text(), "run `python -m mangaka schemas`"
    assert write_timeline_schema(tmp_path).read_text(encoding="utf-8") == timeline_schema_text()
    validator = Draft202012Validator(json.loads(timeline_schema_text()))
    for name in ("golden_screenplay.json", "golden_screenplay.zh.json"):
        assert list(validator.iter_errors(build_timeline(_sp(name)).to_json())) == []


def test_a_timeline_with_a_lone_surrogate_or_nested_too_deeply_is_refused_naming_where():
    data = build_timeline(_sp()).to_json()
    data["shots"][0]["cues"][0]["text"] = "half \ud83d a face"
    with pytest.raises(InputError, match=r"shots\[0\]\.cues\[0\]\.text holds a lone surrogate"):
        timeline_from_json(data)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(InputError, match="nested too deeply"):
        timeline_from_json({"shots": deep})


def test_the_side_files_named_are_the_ones_the_writers_write(tmp_path):
    """``chapter.v2.mp4``: a dot in the name is kept (``chapter.v2.srt``, not ``chapter.srt``), so
    the paths checked before a render and printed after it are the files written."""
    from mangaka.video.motion import side_files
    from mangaka.video.subtitles import write_subtitles
    from mangaka.video.voice import write_voice_script

    timeline = build_timeline(_sp())
    output = tmp_path / "chapter.v2.mp4"
    stem = output.with_suffix("")
    written = [*write_subtitles(timeline, (1080, 1920), stem), write_voice_script(timeline, stem)]
    named = side_files(output)
    assert written == [named["subtitles (SRT)"], named["subtitles (ASS)"], named["voice script"]]
    assert named["timeline"] == tmp_path / "chapter.v2.timeline.json"
