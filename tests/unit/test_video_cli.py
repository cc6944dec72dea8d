"""``python -m mangaka video``, run in-process through ``main``: a screenplay, its panel images and
voice clips (made here with Pillow and ``wave``) become an MP4 and its side files, decoded back with
PyAV; an edited timeline comes back and is followed; every hostile input is one clear error that
names it, and leaves nothing in the output folder."""

from __future__ import annotations

import csv
import json
import os
import shutil
import wave
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from mangaka.cli.main import main
from mangaka.screenplay.validate import screenplay_model
from mangaka.video.timeline import build_timeline

GOLDEN = Path(__file__).parent / "data" / "golden_screenplay.json"
FPS = 12
FAST = ["--size", "1080x1080", "--fps", str(FPS)]
PANELS = len(json.loads(GOLDEN.read_text(encoding="utf-8"))["panels"])
LINES = [d["id"] for d in json.loads(GOLDEN.read_text(encoding="utf-8"))["dialogue"]]


def write_tone(path: Path, seconds: float, rate: int = 24000) -> Path:
    t = np.arange(round(seconds * rate)) / rate
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((0.4 * np.sin(2 * np.pi * 330 * t) * 32767).round().astype("<i2").tobytes())
    return path


@dataclass(frozen=True)
class Inputs:
    screenplay: Path
    images: Path
    voices: Path
    out: Path  # the output folder, empty

    def argv(self, *extra: str, output: Path | str | None = None) -> list[str]:
        target = str(output if output is not None else self.out / "chapter.mp4")
        return ["video", str(self.screenplay), *extra, "-o", target, *FAST]


@pytest.fixture
def inputs(tmp_path) -> Inputs:
    given = tmp_path / "in"
    images, voices = given / "images", given / "voices"
    images.mkdir(parents=True)
    voices.mkdir()
    screenplay = given / "chapter.json"
    shutil.copy(GOLDEN, screenplay)
    for i in range(PANELS):
        Image.new("RGB", (480, 640), (50 + 40 * i, 120, 180 - 30 * i)).save(images / f"{i + 1:02d}.png")
    for i, line in enumerate(LINES):
        write_tone(voices / f"{line}.wav", 0.8 + 0.3 * i)
    out = tmp_path / "out"
    out.mkdir()
    return Inputs(screenplay, images, voices, out)


def seconds_of(path: Path) -> float:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        return frames / float(stream.average_rate)


def refused(argv: list[str], caplog: pytest.LogCaptureFixture, *needles: str) -> str:
    """``main(argv)`` exits 1 with exactly one error, no traceback, holding every one of ``needles``."""
    caplog.clear()
    with caplog.at_level("INFO", logger="mangaka"):
        assert main(argv) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, caplog.text
    assert "Traceback" not in caplog.text and "internal error" not in errors[0]
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def nothing_written(folder: Path, before: set[str] = frozenset()) -> None:
    """``folder`` holds what it held before: no video, no side file, no temporary file."""
    assert set(os.listdir(folder)) == set(before)


# --- end to end ------------------------------------------------------------------------------------


def test_the_command_writes_the_video_and_its_side_files_and_follows_an_edited_timeline(inputs, capsys):
    output = inputs.out / "chapter.mp4"
    argv = inputs.argv("--images", str(inputs.images), "--voices", str(inputs.voices), output=output)
    assert main(argv) == 0
    stem = inputs.out / "chapter"
    side = [stem.with_suffix(".srt"), stem.with_suffix(".ass"), Path(f"{stem}.voice.csv"),
            Path(f"{stem}.timeline.json")]  # fmt: skip
    assert capsys.readouterr().out.splitlines() == [str(p) for p in (output, *side)]
    assert sorted(os.listdir(inputs.out)) == sorted(p.name for p in (output, *side))
    timeline = json.loads(side[3].read_text(encoding="utf-8"))
    assert abs(seconds_of(output) - timeline["duration"]) <= 1 / FPS + 1e-9
    rows = side[2].read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + len(LINES)  # a header and a row per line
    assert side[0].read_text(encoding="utf-8").count(" --> ") == len(LINES)

    longer = 2.0  # the first shot held two seconds longer: every later time moves on by as much
    for i, shot in enumerate(timeline["shots"]):
        shift = 0.0 if i == 0 else longer
        shot["start"] = round(shot["start"] + shift, 3)
        shot["end"] = round(shot["end"] + longer, 3)
        for cue in shot["cues"]:
            cue["start"], cue["end"] = round(cue["start"] + shift, 3), round(cue["end"] + shift, 3)
    timeline["duration"] = round(timeline["duration"] + longer, 3)
    edited = inputs.screenplay.with_name("edited.timeline.json")
    edited.write_text(json.dumps(timeline), encoding="utf-8")
    again = inputs.out / "edited.mp4"
    argv = inputs.argv("--images", str(inputs.images), "--voices", str(inputs.voices), "--timeline",
                       str(edited), output=again)  # fmt: skip
    assert main(argv) == 0
    assert abs(seconds_of(again) - timeline["duration"]) <= 1 / FPS + 1e-9
    assert json.loads((inputs.out / "edited.timeline.json").read_text(encoding="utf-8")) == timeline


# --- hostile inputs ---------------------------------------------------------------------------------


def _images(inputs: Inputs, count: int, odd: tuple[int, int] | None = None) -> list[str]:
    """The images folder holding ``count`` pictures, the second of size ``odd`` when given."""
    for path in inputs.images.iterdir():
        path.unlink()
    for i in range(count):
        size = odd if odd is not None and i == 1 else (480, 640)
        Image.new("RGB", size, (90, 120, 150)).save(inputs.images / f"{i + 1:02d}.png")
    return ["--images", str(inputs.images)]


def _voices(inputs: Inputs, unknown: bool) -> list[str]:
    if unknown:
        write_tone(inputs.voices / "d9.wav", 1.0)
    else:
        write_tone(inputs.voices / "d1.wav", 0.0)  # a WAV header and not one sample
    return ["--voices", str(inputs.voices)]


def _timeline(inputs: Inputs, shape: bool) -> list[str]:
    sp = screenplay_model(json.loads(GOLDEN.read_text(encoding="utf-8")))
    data = build_timeline(sp).to_json()
    if shape:
        data["shots"] = {"p1": data["shots"][0]}
    else:
        data["shots"][0]["panel"] = "p9"  # a panel this screenplay does not have
    path = inputs.screenplay.with_name("chapter.timeline.json")
    path.write_text(json.dumps(data), encoding="utf-8")
    return ["--timeline", str(path)]


INPUT_CASES = {
    "fewer images": (
        lambda i: _images(i, PANELS - 1),
        [f"{PANELS - 1} panel images for {PANELS} panels", "one picture per panel"],
    ),
    "more images": (lambda i: _images(i, PANELS + 1), [f"{PANELS + 1} panel images for {PANELS} panels"]),
    "a tiny image": (
        lambda i: _images(i, PANELS, (16, 16)),
        ["panel image 2 is 16×16 pixels", "32 to 16384"],
    ),
    "a strip": (lambda i: _images(i, PANELS, (20000, 10)), ["panel image 2 is 20000×10 pixels"]),
    "an unknown line's clip": (lambda i: _voices(i, True), ["--voices", "d9.wav", "rename or remove"]),
    "an empty clip": (lambda i: _voices(i, False), ["voice clip for line d1", "d1.wav", "is empty"]),
    "a timeline's shape": (lambda i: _timeline(i, True), ["--timeline", "not a valid timeline", "shots"]),
    "a timeline's panels": (
        lambda i: _timeline(i, False),
        ["timeline shots[0]", "'p9'", "make the timeline from this screenplay again"],
    ),
}


@pytest.mark.parametrize("case", INPUT_CASES)
def test_a_hostile_input_is_named_and_nothing_is_written(case, inputs, caplog):
    setup, needles = INPUT_CASES[case]
    refused(inputs.argv(*setup(inputs)), caplog, *needles)
    nothing_written(inputs.out)
    assert not [p for p in inputs.screenplay.parent.rglob("*") if p.name.startswith(".") or ".tmp" in p.name]


def _output(inputs: Inputs, kind: str) -> Path:
    if kind == "a folder":
        path = inputs.out / "chapter.mp4"
        path.mkdir()
    elif kind == "a device":
        path = Path(os.devnull)
    elif kind == "a link to a device":
        path = inputs.out / "chapter.mp4"
        path.symlink_to(os.devnull)
    elif kind == "a FIFO":
        path = inputs.out / "chapter.mp4"
        os.mkfifo(path)
    else:
        path = inputs.out / "chapter.avi"
    return path


OUTPUT_CASES = {
    "a folder": ["is a folder", "chapter.mp4/chapter.mp4"],
    "a device": [f"-o {os.devnull} is a character device", "give a .mp4 file path"],
    "a link to a device": ["is a character device", "cannot be written through a device"],
    "a FIFO": ["is a FIFO", "give a .mp4 file path"],
    "not an MP4": ["chapter.avi", "the video is an MP4", "ending in .mp4"],
}


@pytest.mark.parametrize("kind", OUTPUT_CASES)
def test_an_output_that_is_not_an_mp4_file_path_is_refused(kind, inputs, caplog):
    output = _output(inputs, kind)
    before = set(os.listdir(inputs.out))
    message = refused(inputs.argv(output=output), caplog, *OUTPUT_CASES[kind])
    assert message.startswith(f"-o {output}")
    nothing_written(inputs.out, before)


def test_a_screenplay_that_is_not_json_and_an_fps_out_of_range_are_named(inputs, caplog):
    inputs.screenplay.write_text("Once upon a time, not a screenplay.", encoding="utf-8")
    refused(inputs.argv(), caplog, str(inputs.screenplay), "no JSON")
    nothing_written(inputs.out)
    shutil.copy(GOLDEN, inputs.screenplay)
    argv = [*inputs.argv(), "--fps", "5"]
    refused(argv, caplog, "--fps", "12 to 60", "got 5")
    nothing_written(inputs.out)


def test_book_video_films_each_written_chapter_and_a_rerun_keeps_them(tmp_path: Path, caplog):
    """``book --video``: each chapter's screenplay in OUT becomes OUT/<chapter>.mp4 (its storyboard);
    a chapter without a screenplay is named and the run says so (1); a rerun keeps a video newer
    than its screenplay."""
    from mangaka.batch.book import select_chapters
    from mangaka.cli.book import chapter_videos

    book = tmp_path / "book.txt"
    book.write_text("Chapter 1\n\nMei waited.\n\nChapter 2\n\nThe ferry came.\n", encoding="utf-8")
    chapters = select_chapters(book).chapters
    out = tmp_path / "out"
    out.mkdir()
    first = out / f"{chapters[0].slug(2)}.json"
    shutil.copy(GOLDEN, first)
    assert chapter_videos(out, chapters, 2) == 1
    assert "chapter 2" in caplog.text
    video = first.with_suffix(".mp4")
    with av.open(str(video)) as container:
        assert container.streams.video[0].width == 1080 and container.duration > 0
    assert first.with_suffix(".srt").is_file()
    made = video.stat().st_mtime_ns
    assert chapter_videos(out, chapters[:1], 2) == 0
    assert video.stat().st_mtime_ns == made


def test_the_bibles_voice_names_reach_the_voice_script_and_the_timeline(inputs, capsys):
    bible = inputs.screenplay.parent / "bible.json"
    people = [("lin", "Lin", "warm_alto"), ("old_tan", "Old Tan", "gravel_bass"), ("kid", "Xiaobao", "")]
    bible.write_text(
        json.dumps(
            {
                "version": 1,
                "characters": [{"id": i, "name": n, "appearance": "", "voice": v} for i, n, v in people],
            }
        ),
        encoding="utf-8",
    )
    assert main(inputs.argv("--bible", str(bible), "--camera", "0")) == 0
    with (inputs.out / "chapter.voice.csv").open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by_speaker = {r["speaker"]: r["voice"] for r in rows}
    assert by_speaker.get("lin") == "warm_alto" and by_speaker.get("old_tan") == "gravel_bass"
    assert by_speaker.get("kid", "") == "" and by_speaker.get("narrator", "") == ""
    timeline = json.loads((inputs.out / "chapter.timeline.json").read_text(encoding="utf-8"))
    voices = {c["speaker"]: c["voice"] for s in timeline["shots"] for c in s["cues"]}
    assert voices["lin"] == "warm_alto"
