"""A timeline drawn and encoded: frames and sound written to an MP4 (H.264 + AAC) as a stream.

Each frame is drawn when it is encoded and dropped after, and the sound is mixed a chunk at a
time just ahead of the frames, so memory does not grow with the video's length: what is held is
the current shot's picture (and the next one's during a crossfade), its backdrop, the subtitle on
screen and the voice clips themselves.

How a frame looks: the shot's picture is fitted whole inside the frame (its shape kept), over a
blurred, darkened copy of itself that fills the frame; the camera's window (``camera.window``)
moves over the picture; the subtitle on screen (``subtitles.Burner``) is drawn over it. Between
two panels the shots cross-fade around their cut (``crossfade`` seconds, none between the parts
of one panel); the first shot's move starts, and the last one's ends, ``hold`` seconds from the
video's ends.

The file is written beside its path and renamed over it only when complete: an interrupted or
failed render leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from PIL import Image, ImageFilter

from ..errors import Cancelled, InputError
from ..fileio import atomic_output
from .audio import SAMPLE_RATE, Clip, Mix
from .camera import window
from .options import RenderOptions
from .pictures import size_of
from .subtitles import Burner, Caption
from .timeline import Shot, Timeline, check_pictures

log = logging.getLogger(__name__)

MIN_PICTURE = 32  # pixels a side at least
MAX_PICTURE = 16384  # and at most
MAX_ASPECT = 12.0  # a picture longer than 12 times its width (or the reverse) is not a panel
CRF = "20"  # x264's quality: visually clean for flat, drawn pictures
PRESET = "superfast"  # faster than real time on two cores beside the drawing; stills compress well
BACKDROP_DARKEN = 0.45  # the blurred backdrop's brightness


@dataclass(frozen=True)
class VideoResult:
    """What was written: the file, its frames, its length in seconds and the seconds it took."""

    path: Path
    frames: int
    seconds: float
    elapsed: float


def check_pictures_fit(pictures: Sequence[Image.Image]) -> None:
    """``InputError`` for the first picture too small, too large or too long and thin to be a
    panel (read from its size: a lazy sequence decodes nothing)."""
    for i in range(len(pictures)):
        check_picture_size(size_of(pictures, i), f"panel image {i + 1}")


def check_picture_size(size: tuple[int, int], what: str) -> None:
    """``InputError`` for a picture of ``size`` too small, too large or too long and thin to be a
    panel."""
    w, h = size
    if min(w, h) < MIN_PICTURE or max(w, h) > MAX_PICTURE:
        raise InputError(
            f"{what} is {w}×{h} pixels; a panel picture is {MIN_PICTURE} to {MAX_PICTURE} pixels a side"
        )
    if max(w, h) / min(w, h) > MAX_ASPECT:
        raise InputError(
            f"{what} is {w}×{h} pixels, more than {MAX_ASPECT:g} times longer one way than the other; "
            "give the panel's picture, not a strip or a line"
        )


class _Stage:
    """One shot's picture ready to film: scaled once for its move, on its backdrop."""

    def __init__(self, picture: Image.Image, shot: Shot, frame: tuple[int, int]) -> None:
        fw, fh = frame
        rgb = picture.convert("RGB")
        scale = min(fw / rgb.width, fh / rgb.height)
        self.rect_size = (max(2, round(rgb.width * scale)), max(2, round(rgb.height * scale)))
        self.origin = ((fw - self.rect_size[0]) // 2, (fh - self.rect_size[1]) // 2)
        zoom = 1.0 + shot.amount  # scaled once to the size the closest window needs: no per-frame shrink
        size = (round(self.rect_size[0] * zoom), round(self.rect_size[1] * zoom))
        self.picture = rgb.resize(size, Image.Resampling.LANCZOS) if size != rgb.size else rgb
        self.canvas = _backdrop(rgb, frame) if self.rect_size != frame else None
        self.shot = shot

    def draw(self, progress: float, direction: str) -> Image.Image:
        """The frame at ``progress`` of the move. The stage's own canvas: valid until the next
        call (the renderer turns it into a video frame before that)."""
        shot = self.shot
        left, top, right, bottom = window(shot.move, shot.amount, direction, progress, self.picture.size).box
        rw, rh = self.rect_size
        if abs(right - left - rw) < 0.5 and abs(bottom - top - rh) < 0.5:  # a pan or tilt: no scaling
            x, y = round(left), round(top)
            view = self.picture.crop((x, y, x + rw, y + rh))
        else:
            view = self.picture.resize(
                self.rect_size, Image.Resampling.BILINEAR, box=(left, top, right, bottom)
            )
        if self.canvas is None:
            return view
        self.canvas.paste(view, self.origin)
        return self.canvas


def _backdrop(picture: Image.Image, frame: tuple[int, int]) -> Image.Image:
    """The picture covering the whole frame, blurred and darkened (drawn small, then enlarged)."""
    fw, fh = frame
    small = (max(1, fw // 8), max(1, fh // 8))
    scale = max(small[0] / picture.width, small[1] / picture.height)
    cover = picture.resize((max(1, round(picture.width * scale)), max(1, round(picture.height * scale))))
    left, top = (cover.width - small[0]) // 2, (cover.height - small[1]) // 2
    cover = cover.crop((left, top, left + small[0], top + small[1])).filter(ImageFilter.GaussianBlur(3))
    cover = cover.point(lambda v: round(v * BACKDROP_DARKEN))
    return cover.resize(frame, Image.Resampling.BILINEAR)


def _panel_bounds(timeline: Timeline) -> list[tuple[float, float]]:
    """Each shot's panel's start and end: a panel cut in parts (a shot whose move does not start
    at 0 continues the one before) spans its shots."""
    bounds: list[tuple[float, float]] = []
    group: list[Shot] = []
    for shot in [*timeline.shots, None]:
        if group and (shot is None or shot.progress[0] == 0):
            bounds += [(group[0].start, group[-1].end)] * len(group)
            group = []
        if shot is not None:
            group.append(shot)
    return bounds


class _Film:
    """Which shot (or two, in a crossfade) a moment shows, and how far its move has run."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.shots = timeline.shots
        self.panels = _panel_bounds(timeline)
        self.index = 0

    def progress(self, i: int, t: float) -> float:
        shot, (start, end) = self.shots[i], self.panels[i]
        hold = self.timeline.hold
        if start <= 0.0:
            start = min(start + hold, end)
        if end >= self.timeline.duration - 1e-6:
            end = max(end - hold, start)
        if end <= start:
            return shot.progress[0] if t < start else shot.progress[1]
        p = (t - start) / (end - start)
        return min(max(p, shot.progress[0]), shot.progress[1])

    def at(self, t: float) -> tuple[int, int | None, float]:
        """The shot at ``t``, the shot it fades with (None) and the other's weight (0 to 1)."""
        while self.index + 1 < len(self.shots) and t >= self.shots[self.index].end:
            self.index += 1
        i, half = self.index, self.timeline.crossfade / 2
        if half <= 0:
            return i, None, 0.0
        shot = self.shots[i]
        if i + 1 < len(self.shots) and t >= shot.end - half and self.shots[i + 1].progress[0] == 0:
            return i, i + 1, (t - (shot.end - half)) / (2 * half)
        if i > 0 and t < shot.start + half and shot.progress[0] == 0:
            return i - 1, i, (t - (shot.start - half)) / (2 * half)
        return i, None, 0.0


def _open_streams(output: BinaryIO, options: RenderOptions) -> tuple[Any, Any, Any]:
    import av  # PyAV: loaded only to encode

    container = av.open(output, "w", format="mp4")
    codec = "libx264" if "libx264" in av.codecs_available else "h264"
    video = container.add_stream(codec, rate=options.fps)
    video.width, video.height = options.frame_size
    video.pix_fmt = "yuv420p"
    if codec == "libx264":
        video.options = {"preset": PRESET, "crf": CRF}
    audio = container.add_stream("aac", rate=SAMPLE_RATE, layout="mono")
    return container, video, audio


class _Subtitles:
    """The caption on screen at a moment; made when its cue starts, dropped when it ends."""

    def __init__(self, timeline: Timeline, burner: Burner | None) -> None:
        self.cues = timeline.cues()
        self.burner = burner
        self.next = 0
        self.showing: list[Caption] = []

    def at(self, t: float) -> Caption | None:
        if self.burner is None:
            return None
        while self.next < len(self.cues) and self.cues[self.next].start <= t:
            self.showing = self.burner.captions(self.cues[self.next])
            self.next += 1
        for caption in self.showing:
            if caption.start <= t < caption.end:
                return caption
        return None


def _frame(
    film: _Film, stages: dict[int, _Stage], t: float, at: tuple[int, int | None, float], direction: str
) -> Image.Image:
    """The picture at ``t``: shot ``i``'s, blended with shot ``j``'s by ``weight`` in a crossfade
    (``at``, what ``film.at(t)`` said)."""
    i, j, weight = at
    image = stages[i].draw(film.progress(i, t), direction)
    if j is not None:
        other = stages[j].draw(film.progress(j, t), direction)
        image = Image.blend(image, other, min(max(weight, 0.0), 1.0))
    return image


def _stages_for(
    film: _Film,
    stages: dict[int, _Stage],
    at: tuple[int, int | None, float],
    pictures: Sequence[Image.Image],
    frame: tuple[int, int],
) -> None:
    """Makes the stages shots ``i`` and ``j`` need (``at``) and drops those behind them. A shot
    that continues its panel's move (the same picture, move and amount) takes the part before's
    stage: it is scaled for that move, and parts are never on screen together (no crossfade)."""
    i, j, _ = at
    for k in (i, j):
        if k is not None and k not in stages:
            shot = film.shots[k]
            before = stages.get(k - 1)
            if shot.progress[0] > 0 and before is not None and _same_move(before.shot, shot):
                stages[k] = before
            else:
                stages[k] = _Stage(pictures[shot.image], shot, frame)
    for k in [k for k in stages if k < i]:
        del stages[k]


def _same_move(a: Shot, b: Shot) -> bool:
    return (a.image, a.move, a.amount) == (b.image, b.move, b.amount)


def write_video(
    timeline: Timeline,
    pictures: Sequence[Image.Image],
    output: Path,
    options: RenderOptions | None = None,
    clips: Mapping[str, Clip] | None = None,
    music: Clip | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> VideoResult:
    """Draws and encodes ``timeline`` with one picture per panel (``pictures``, reading order)
    into the MP4 ``output``; ``clips``: voice clips by line id, placed at their cues; ``music``
    under them. ``progress(done, total)`` is called as frames are encoded; ``cancelled()`` true
    stops the render (``Cancelled``) and leaves nothing at ``output``."""
    options = options or RenderOptions()
    check_pictures(timeline, len(pictures))
    check_pictures_fit(pictures)
    clips = clips or {}
    mix = Mix(
        [(c.start, clips[c.line]) for c in timeline.cues() if c.line in clips],
        timeline.duration, music, options.music_volume,
    )  # fmt: skip
    burner = Burner(timeline.language, options.frame_size) if options.subtitles else None
    started = time.monotonic()
    with atomic_output(output) as fh:
        frames = _encode(timeline, pictures, fh, options, mix, burner, progress, cancelled)
    elapsed = time.monotonic() - started
    seconds = frames / options.fps
    log.info("wrote %s: %d frames, %.1f s of video in %.1f s", output, frames, seconds, elapsed)
    return VideoResult(Path(output), frames, seconds, elapsed)


def _encode(
    timeline: Timeline,
    pictures: Sequence[Image.Image],
    fh: BinaryIO,
    options: RenderOptions,
    mix: Mix,
    burner: Burner | None,
    progress: Callable[[int, int], None] | None,
    cancelled: Callable[[], bool] | None,
) -> int:
    """Encodes every frame and the mix into ``fh``; the frame count. The frames are drawn in a
    thread of their own a few frames ahead of the encoder, so drawing and encoding share the
    cores (Pillow and FFmpeg let go of the interpreter lock while they work)."""
    total = max(1, round(timeline.duration * options.fps))
    container, video, audio = _open_streams(fh, options)
    chunks = iter(mix.chunks(1024))
    sample = 0
    with container, _ahead(_video_frames(timeline, pictures, options, burner, total, cancelled)) as frames:
        for n, frame in enumerate(frames):
            for packet in video.encode(frame):
                container.mux(packet)
            sample = _audio_until((n + 1) / options.fps, sample, chunks, audio, container)
            if progress is not None:
                progress(n + 1, total)
        for packet in video.encode(None):
            container.mux(packet)
        _audio_until(float("inf"), sample, chunks, audio, container)
        for packet in audio.encode(None):
            container.mux(packet)
    return total


def _video_frames(
    timeline: Timeline,
    pictures: Sequence[Image.Image],
    options: RenderOptions,
    burner: Burner | None,
    total: int,
    cancelled: Callable[[], bool] | None,
) -> Iterator[Any]:
    """Every frame of the video in order, as FFmpeg frames ready to encode (yuv420p)."""
    import av  # PyAV: loaded only to encode

    film, subtitles = _Film(timeline), _Subtitles(timeline, burner)
    stages: dict[int, _Stage] = {}
    for n in range(total):
        if cancelled is not None and cancelled():
            raise Cancelled("the motion comic was stopped; nothing was written")
        t = n / options.fps
        at = film.at(t)
        _stages_for(film, stages, at, pictures, options.frame_size)
        image = _frame(film, stages, t, at, timeline.direction)
        caption = subtitles.at(t)
        saved = None
        if caption is not None:  # drawn on the stage's canvas, and the canvas put back after
            where = (caption.x, caption.y)
            saved = image.crop((*where, where[0] + caption.image.width, where[1] + caption.image.height))
            image.paste(caption.image, where, caption.image)
        frame = av.VideoFrame.from_image(image).reformat(format="yuv420p")
        if saved is not None:
            image.paste(saved, where)
        frame.pts = n
        yield frame


@contextlib.contextmanager
def _ahead(items: Iterator[Any], depth: int = 4) -> Iterator[Iterator[Any]]:
    """``items`` made in a thread up to ``depth`` ahead of the reader; the maker's error is
    raised in the reader, and the maker stops when the reader leaves (an error, an interrupt)."""
    made: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def make() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        made.put(("item", item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            made.put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            made.put(("error", exc))

    def read() -> Iterator[Any]:
        while True:
            kind, value = made.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value

    maker = threading.Thread(target=make, name="mangaka-video-frames", daemon=True)
    maker.start()
    try:
        yield read()
    finally:
        stop.set()
        while maker.is_alive():
            try:
                made.get(timeout=0.1)
            except queue.Empty:
                pass
        maker.join()


def _audio_until(t: float, sample: int, chunks: Any, stream: Any, container: Any) -> int:
    """Encodes the mix's chunks up to second ``t``; the next sample's index."""
    import av  # PyAV: loaded only to encode

    while sample < t * SAMPLE_RATE:
        chunk = next(chunks, None)
        if chunk is None:
            break
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        frame.pts = sample
        for packet in stream.encode(frame):
            container.mux(packet)
        sample += chunk.shape[0]
    return sample
