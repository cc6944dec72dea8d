"""A motion comic drawn and encoded (``mangaka/video/render.py``, ``motion.py``), then decoded with
real PyAV: its length, size, rate and sound; its subtitles beside it and burned into it; its camera
moves seen in the pixels; its crossfades; and a stopped or failed render leaving nothing behind.
Pictures are made here with Pillow, voice clips with ``wave``; small frames keep it quick."""

from __future__ import annotations

import itertools
import json
import re
import threading
import wave
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image, ImageDraw

from mangaka.errors import Cancelled
from mangaka.screenplay.validate import screenplay_model
from mangaka.video.audio import SAMPLE_RATE, clip_from_file
from mangaka.video.camera import choose_move
from mangaka.video.motion import plan_motion_comic, side_files, write_motion_comic
from mangaka.video.options import RenderOptions, TimingOptions
from mangaka.video.render import write_video
from mangaka.video.subtitles import Burner
from mangaka.video.timeline import build_timeline

GOLDEN = Path(__file__).parent / "data" / "golden_screenplay.json"
FPS = 12
SIZE = (1080, 1080)
OPTIONS = RenderOptions(size="1080x1080", fps=FPS, subtitles=False)
FRAME = 1 / FPS


def screenplay(panels: list[tuple[str, str, list[str]]]):
    """The golden screenplay's cast and lines, with ``panels`` (shot, angle, line ids) of its own."""
    data = json.loads(GOLDEN.read_text(encoding="utf-8"))
    base = data["panels"][0]
    data["panels"] = [
        {**base, "id": f"p{i}", "shot": shot, "angle": angle, "dialogue": ids}
        for i, (shot, angle, ids) in enumerate(panels, 1)
    ]
    used = {i for _, _, ids in panels for i in ids}
    data["dialogue"] = [d for d in data["dialogue"] if d["id"] in used]
    return screenplay_model(data)


def golden():
    return screenplay_model(json.loads(GOLDEN.read_text(encoding="utf-8")))


def write_tone(path: Path, seconds: float, freq: float = 440.0, rate: int = 22050) -> Path:
    t = np.arange(round(seconds * rate)) / rate
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((0.5 * np.sin(2 * np.pi * freq * t) * 32767).round().astype("<i2").tobytes())
    return path


@dataclass(frozen=True)
class Decoded:
    frames: int
    rate: float
    size: tuple[int, int]
    audio_rate: int
    audio: np.ndarray  # mono float, from the first decoded sample
    audio_start: float  # the first sample's time


def decode(path: Path) -> Decoded:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        rate = float(stream.average_rate)
        sizes = {(f.width, f.height) for f in container.decode(stream)}
        frames = stream.frames
    with av.open(str(path)) as container:
        decoded = list(container.decode(container.streams.audio[0]))
    count = sum(1 for _ in frames_of(path))
    assert frames in (0, count) and len(sizes) == 1
    audio = np.concatenate([f.to_ndarray().reshape(-1) for f in decoded])
    return Decoded(count, rate, sizes.pop(), decoded[0].sample_rate, audio, float(decoded[0].time or 0))


def frames_of(path: Path) -> Iterable[np.ndarray]:
    """Every frame, RGB, in order."""
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            yield frame.to_ndarray(format="rgb24")


def frames_at(path: Path, indexes: Iterable[int]) -> dict[int, np.ndarray]:
    wanted = set(indexes)
    out = {n: f for n, f in enumerate(frames_of(path)) if n in wanted}
    assert set(out) == wanted
    return out


def leftovers(folder: Path) -> list[str]:
    """What a render left in ``folder``: any file at all (the video, a temporary file)."""
    return sorted(p.name for p in folder.iterdir())


# --- length, size, rate and sound ----------------------------------------------------------------


@pytest.fixture(scope="module")
def voiced(tmp_path_factory):
    """The golden chapter with a voice clip per line, rendered once with its side files."""
    folder = tmp_path_factory.mktemp("voiced")
    sp = golden()
    clips = {
        line.id: clip_from_file(write_tone(folder / f"{line.id}.wav", 1.0 + 0.2 * i), "clip")
        for i, line in enumerate(sp.dialogue)
    }
    pictures = [Image.new("RGB", (600, 800), (40 * i, 90, 150)) for i in range(len(sp.panels))]
    plan = plan_motion_comic(sp, pictures, TimingOptions(), clips)
    output = folder / "out" / "chapter.mp4"
    output.parent.mkdir()
    result, files = write_motion_comic(plan, output, RenderOptions(size="1080x1080", fps=FPS))
    return plan, result, files, output


def test_the_video_lasts_the_timeline_at_its_size_and_rate(voiced):
    plan, result, _, output = voiced
    got = decode(output)
    assert abs(got.frames / got.rate - plan.timeline.duration) <= FRAME + 1e-9
    assert result.frames == got.frames and got.size == SIZE and got.rate == FPS
    assert got.audio_rate == SAMPLE_RATE == 48000
    assert abs(len(got.audio) / SAMPLE_RATE - plan.timeline.duration) <= 0.1  # AAC's priming and padding


def test_voices_are_heard_at_their_cues_and_silence_before_the_first(voiced):
    plan, _, _, output = voiced
    got = decode(output)
    offset = round(got.audio_start * SAMPLE_RATE)

    def level(start: float, end: float) -> float:
        part = got.audio[round(start * SAMPLE_RATE) - offset : round(end * SAMPLE_RATE) - offset]
        return float(np.sqrt(np.mean(np.square(part, dtype=np.float64))))

    cues = plan.timeline.cues()
    assert cues[0].start >= 0.3
    assert level(0.0, cues[0].start - 0.08) < 1e-3  # before the first line: silence
    for cue in cues:
        middle = (cue.start + cue.end) / 2
        assert level(middle - 0.1, middle + 0.1) > 0.2, cue.line  # the 0.5 tone, rms 0.35
    gaps = [(a.end, b.start) for a, b in itertools.pairwise(cues) if b.start - a.end > 0.25]
    assert gaps and all(level(a + 0.08, b - 0.08) < 0.01 for a, b in gaps)  # and between lines


def test_the_srt_beside_it_has_each_lines_text_and_times(voiced):
    plan, _, files, output = voiced
    assert files == side_files(output) and all(p.is_file() for p in files.values())
    text = files["subtitles (SRT)"].read_text(encoding="utf-8")
    stamp = r"(\d\d):(\d\d):(\d\d),(\d{3})"
    entries = []
    for block in text.strip().split("\n\n"):
        number, times, *body = block.splitlines()
        match = re.fullmatch(f"{stamp} --> {stamp}", times)
        assert match, times
        h1, m1, s1, ms1, h2, m2, s2, ms2 = (int(g) for g in match.groups())
        start, end = (h1 * 60 + m1) * 60 + s1 + ms1 / 1000, (h2 * 60 + m2) * 60 + s2 + ms2 / 1000
        entries.append((int(number), start, end, "\n".join(body)))
    cues = plan.timeline.cues()
    assert [e[0] for e in entries] == list(range(1, len(cues) + 1))
    for (_, start, end, body), cue in zip(entries, cues, strict=True):
        assert body == cue.text
        assert start == pytest.approx(cue.start, abs=0.0011) and end == pytest.approx(cue.end, abs=0.0011)
    saved = json.loads(files["timeline"].read_text(encoding="utf-8"))
    assert saved == plan.timeline.to_json()


# --- burned subtitles ------------------------------------------------------------------------------


def test_a_burned_subtitle_is_in_the_frame_at_its_time(tmp_path):
    sp = screenplay([("medium", "eye_level", ["d3"])])
    timeline = build_timeline(sp, TimingOptions(camera=0))
    ramp = np.linspace(40, 170, 600, dtype=np.uint8)
    picture = Image.fromarray(np.stack([np.tile(ramp, (800, 1))] * 3, axis=2))
    (cue,) = timeline.cues()
    middle = (cue.start + cue.end) / 2
    n = int(middle * FPS)
    shown = {}
    for burn in (True, False):
        path = tmp_path / f"burn-{burn}.mp4"
        write_video(timeline, [picture], path, RenderOptions(size="1080x1080", fps=FPS, subtitles=burn))
        shown[burn] = frames_at(path, [n])[n].astype(np.int16)
    captions = [c for c in Burner(timeline.language, SIZE).captions(cue) if c.start <= n / FPS < c.end]
    assert len(captions) == 1
    c = captions[0]
    box = (slice(c.y, c.y + c.image.height), slice(c.x, c.x + c.image.width))
    diff = np.abs(shown[True] - shown[False]).mean(axis=2)
    assert diff[box].mean() > 25  # the caption's ink
    outside = np.ones(diff.shape, bool)
    outside[max(0, c.y - 16) : c.y + c.image.height + 16, max(0, c.x - 16) : c.x + c.image.width + 16] = False
    assert diff[outside].mean() < 1.0  # and nothing else changed
    white = (shown[True][box] > 215).all(axis=2)
    assert white.sum() > 500 and not (shown[False][box] > 215).all(axis=2).any()


# --- camera moves ------------------------------------------------------------------------------------

RED = (250, 40, 40)


def bordered_stripes(size: tuple[int, int]) -> Image.Image:
    """Vertical stripes of yellow and magenta, 20 px wide, in a 4 px red frame: every colour, and
    every blend of two, has a high red channel (the dark backdrop has a low one)."""
    picture = Image.new("RGB", size, (250, 240, 60))
    draw = ImageDraw.Draw(picture)
    for x in range(0, size[0], 40):
        draw.rectangle((x, 0, x + 19, size[1]), fill=(240, 60, 240))
    draw.rectangle((0, 0, size[0] - 1, size[1] - 1), outline=RED, width=4)
    return picture


def red_share(strip: np.ndarray) -> float:
    r, g, b = (strip[..., i].astype(int) for i in range(3))
    return float(((r > 170) & (g < 110) & (b < 110)).mean())


def stripes_across(row: np.ndarray) -> int:
    """How many times a row turns between yellow (green high) and magenta (green low)."""
    yellow = row[:, 1] > 150
    return int(np.count_nonzero(yellow[1:] != yellow[:-1]))


def test_a_push_in_moves_closer_and_never_shows_past_the_picture(tmp_path):
    sp = screenplay([("close_up", "eye_level", ["d5"])])
    timeline = build_timeline(sp, TimingOptions(min_shot=4.0))
    assert timeline.shots[0].move == "push_in" and timeline.shots[0].amount == pytest.approx(0.2)
    path = tmp_path / "push.mp4"
    write_video(timeline, [bordered_stripes((600, 800))], path, OPTIONS)
    left, right = 135, 135 + 810  # a 600×800 picture fitted into 1080×1080: 810×1080 in the middle
    first = last = None
    changes = []
    for n, frame in enumerate(frames_of(path)):
        assert frame[3:-3, left + 3 : right - 3, 0].min() > 150, n  # the picture's, not the backdrop
        assert frame[:, : left - 3, 0].max() < 130, n  # which stays outside the fitted picture
        if last is not None:
            changes.append(float(np.abs(frame.astype(int) - last.astype(int)).mean()))
        first = frame if first is None else first
        last = frame
    assert first is not None and last is not None
    assert max(changes) > 0.5 and np.abs(first.astype(int) - last.astype(int)).mean() > 20
    edges = {
        "left": lambda f: f[100:-100, left : left + 8],
        "right": lambda f: f[100:-100, right - 8 : right],
        "bottom": lambda f: f[-8:, left + 100 : right - 100],
    }
    for name, strip in edges.items():
        assert red_share(strip(first)) > 0.4, name  # the frame is in view at the start
        assert red_share(strip(last)) < 0.01, name  # and pushed out of it at the end
    middle = SIZE[1] // 2
    assert stripes_across(last[middle, left:right]) < 0.9 * stripes_across(first[middle, left:right])


def pan_seed() -> int:
    return next(s for s in range(100) if choose_move("wide", "eye_level", s, "p1") == "pan")


@pytest.mark.parametrize("direction", ["rtl", "ltr"])
def test_a_pan_runs_in_the_reading_direction(tmp_path, direction):
    sp = screenplay([("wide", "eye_level", ["d1"])])
    timeline = build_timeline(sp, TimingOptions(min_shot=4.0, seed=pan_seed(), direction=direction))
    assert timeline.shots[0].move == "pan" and timeline.shots[0].amount == pytest.approx(0.2)
    gradient = np.linspace(0, 255, 1600)
    picture = np.zeros((600, 1600, 3), np.uint8)
    picture[..., 0] = gradient.round().astype(np.uint8)
    picture[..., 1], picture[..., 2] = 120, 80
    path = tmp_path / f"pan-{direction}.mp4"
    write_video(timeline, [Image.fromarray(picture)], path, OPTIONS)
    # 1600×600 fitted into 1080×1080 is 1080×405 from y 337; at zoom 1.2 the picture is 1296 wide and
    # the window, 1080 wide, has 216 px to travel. The red at the frame's middle says where it is.
    seen = [float(f[500:580, 500:580, 0].mean()) / 255 * 1296 - 540 for f in frames_of(path)]
    travel = seen[-1] - seen[0]
    if direction == "rtl":  # the window moves left: the picture slides right on the screen
        assert travel == pytest.approx(-216, abs=25)
        assert all(b <= a + 2 for a, b in itertools.pairwise(seen))
    else:
        assert travel == pytest.approx(216, abs=25)
        assert all(b >= a - 2 for a, b in itertools.pairwise(seen))


# --- crossfades ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("crossfade", [0.5, 0.0])
def test_a_crossfade_blends_the_cut_and_none_cuts_hard(tmp_path, crossfade):
    sp = screenplay([("medium", "eye_level", []), ("medium", "eye_level", [])])
    timeline = build_timeline(sp, TimingOptions(beat=1.0, camera=0, hold=0, crossfade=crossfade))
    assert [(s.start, s.end) for s in timeline.shots] == [(0, 1.0), (1.0, 2.0)]
    red, blue = Image.new("RGB", (400, 400), (220, 30, 30)), Image.new("RGB", (400, 400), (30, 30, 220))
    path = tmp_path / "cut.mp4"
    write_video(timeline, [red, blue], path, OPTIONS)
    cut = FPS  # the frame at 1.0 s
    got = {
        n: f[400:680, 400:680].reshape(-1, 3).mean(axis=0) for n, f in frames_at(path, [2, cut, 20]).items()
    }
    assert got[2][0] > 200 and got[20][2] > 200  # red well before the cut, blue well after
    if crossfade:
        assert 90 < got[cut][0] < 160 and 90 < got[cut][2] < 160  # half of each
    else:
        assert got[cut][0] < 45 and got[cut][2] > 200  # the next panel alone


# --- a stopped or failed render --------------------------------------------------------------------------


def small_render() -> tuple:
    sp = screenplay([("medium", "eye_level", ["d2"]), ("close_up", "eye_level", ["d3"])])
    pictures = [Image.new("RGB", (300, 400), (200, 90, 40)), Image.new("RGB", (300, 400), (40, 90, 200))]
    return build_timeline(sp), pictures


def test_a_cancelled_render_raises_and_leaves_nothing(tmp_path):
    timeline, pictures = small_render()
    before = threading.active_count()
    asked = itertools.count()
    output = tmp_path / "stopped.mp4"
    with pytest.raises(Cancelled):
        write_video(
            timeline, pictures, output, RenderOptions(size="1080x1080", fps=FPS),
            cancelled=lambda: next(asked) >= 10,
        )  # fmt: skip
    assert next(asked) > 10 and leftovers(tmp_path) == []
    assert threading.active_count() == before


def test_an_error_in_the_progress_callback_leaves_nothing_and_stops_the_drawing(tmp_path):
    timeline, pictures = small_render()
    before = threading.active_count()
    seen = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 5:
            raise RuntimeError("the progress bar broke")

    with pytest.raises(RuntimeError, match="progress bar broke"):
        write_video(timeline, pictures, tmp_path / "failed.mp4", OPTIONS, progress=progress)
    assert seen[-1][0] == 5 and seen[-1][1] == round(timeline.duration * FPS)
    assert leftovers(tmp_path) == []
    assert threading.active_count() == before
    assert not [t for t in threading.enumerate() if t.name == "mangaka-video-frames"]
