"""``python -m mangaka video SCREENPLAY``: a motion comic (MP4, H.264 + AAC) from a screenplay, its
panel images (storyboard cards when none), voice clips named by line id and music, with its
subtitles (SRT, ASS), voice script and timeline beside it. Every input is checked before a frame
is drawn."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..compose.extract import screenplay_from_file
from ..errors import InputError
from ..fileio import file_kind, parse_json, read_text
from ..options import fields_from_args, flag_names
from ..screenplay.bible import load_series_bible
from ..screenplay.models import Screenplay
from ..video.options import VIDEO_OPTIONS, render_from, timing_from
from ..video.timeline import timeline_from_json
from ..video.voice import voices_from_bible
from .args import add_declared_flags
from .page import panel_image_files
from .paths import check_output_file

if TYPE_CHECKING:
    from ..video.audio import Clip

log = logging.getLogger("mangaka")

VIDEO_FLAGS = flag_names(VIDEO_OPTIONS)
MAX_TIMELINE_BYTES = 16 * 1024 * 1024


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("video", help="a motion comic (MP4) from a screenplay JSON: timed shots, camera "
                       "moves, subtitles and voice")  # fmt: skip
    p.add_argument("screenplay", type=Path, help="screenplay JSON (or an LLM reply holding it)")
    p.add_argument("--images", type=Path, help="folder of panel images, one per panel in name order "
                   "(default: storyboard cards)")  # fmt: skip
    p.add_argument("--voices", type=Path, help="folder of voice clips named by line id (d1.wav, d2.mp3, …); "
                   "lines without one are timed by reading")  # fmt: skip
    p.add_argument("--music", type=Path, help="music under the voices (any audio file; looped)")
    p.add_argument("--timeline", type=Path, help="a timeline JSON to use as it is (one this command "
                   "wrote, edited); the timing flags then do not apply")  # fmt: skip
    p.add_argument("--bible", type=Path, help="the series bible: each character's voice name goes into the "
                   "voice script and the timeline")  # fmt: skip
    add_declared_flags(p, "video")
    p.add_argument("-o", "--output", type=Path, help="the video file (default: the screenplay's name, .mp4)")
    p.set_defaults(func=run)


def default_output(screenplay: Path) -> Path:
    """``X.mp4`` beside ``X.json`` or ``X.screenplay.json``."""
    name = screenplay.name
    for suffix in (".screenplay.json", ".json"):
        if name.endswith(suffix):
            return screenplay.with_name(name[: -len(suffix)] + ".mp4")
    return screenplay.with_name(name + ".mp4")


def check_video_output(output: Path, inputs: Mapping[str, Path | None]) -> None:
    """Refuse a video path that is a folder, a device or a pipe, not ``.mp4``, or one of
    ``inputs`` (its side files too), before anything is read or drawn."""
    from ..video.motion import side_files  # PIL and the renderer: loaded only to draw

    try:
        kind = file_kind(os.stat(output).st_mode)
    except OSError:
        kind = None  # absent (or unreachable: check_output_file says why)
    if kind == "folder":
        raise InputError(
            f"-o {output} is a folder; give a video file name in it, e.g. {output / 'chapter.mp4'}"
        )
    if kind not in (None, "file"):  # an MP4's index is written last, at a place seeked back to
        raise InputError(
            f"-o {output} is a {kind}: an MP4 is written by seeking back into its file, so it cannot be "
            "written through a device or a pipe; give a .mp4 file path"
        )
    if output.suffix.lower() != ".mp4":
        raise InputError(f"-o {output}: the video is an MP4; give a file name ending in .mp4")
    check_output_file(output, inputs, derived=side_files(output))


def _read_timeline(path: Path) -> Any:
    text = read_text(path, "--timeline file", limit=MAX_TIMELINE_BYTES)
    data = parse_json(text, f"--timeline {path}", "give a timeline this command wrote")
    return timeline_from_json(data, f"--timeline {path}")


def run(args: argparse.Namespace) -> int:
    """A motion comic from a screenplay JSON: every input checked, then drawn and encoded."""
    from ..video.audio import MAX_MUSIC_SECONDS, clip_from_file, clips_from_folder  # numpy, PyAV: to encode
    from ..video.motion import plan_motion_comic  # Pillow, PyAV: loaded only to draw
    from ..video.pictures import PanelFiles, StoryboardCards  # Pillow: loaded only to draw

    fields = fields_from_args(args, VIDEO_OPTIONS)
    try:
        timing, render = timing_from(fields), render_from(fields)
    except InputError as exc:
        raise exc.renamed(VIDEO_FLAGS) from None
    output = args.output or default_output(args.screenplay)
    inputs = {
        "the screenplay": args.screenplay, "the timeline": args.timeline, "the music": args.music,
        "the images folder": args.images, "the voices folder": args.voices, "the bible": args.bible,
    }  # fmt: skip
    check_video_output(output, inputs)
    screenplay = screenplay_from_file(args.screenplay)
    timeline = _read_timeline(args.timeline) if args.timeline else None
    pictures = PanelFiles(panel_image_files(args.images)) if args.images else StoryboardCards(screenplay)
    clips: dict[str, Clip] = {}
    if args.voices:
        clips = clips_from_folder(args.voices, [line.id for line in screenplay.dialogue])
    music = clip_from_file(args.music, "--music file", limit=MAX_MUSIC_SECONDS) if args.music else None
    voices = voices_from_bible(load_series_bible(args.bible)) if args.bible else {}
    plan = plan_motion_comic(screenplay, pictures, timing, clips, music, voices, timeline)
    for path in _write(plan, output, render):
        sys.stdout.write(f"{path}\n")
    return 0


def storyboard_video(screenplay: Screenplay, output: Path) -> list[Path]:
    """The motion comic of ``screenplay``'s storyboard cards with the default options (the demo's
    ``--video``): the video and its side files."""
    from ..video.motion import plan_motion_comic  # Pillow, PyAV: loaded only to draw
    from ..video.pictures import StoryboardCards  # Pillow: loaded only to draw

    return _write(plan_motion_comic(screenplay, StoryboardCards(screenplay)), output, render_from({}))


def _write(plan: Any, output: Path, render: Any) -> list[Path]:
    from ..video.motion import write_motion_comic  # Pillow, PyAV: loaded only to draw

    result, files = write_motion_comic(plan, output, render, progress=_progress())
    log.info(
        "%.1f s of video (%d frames) in %.1f s: %.2f s of work a second of video",
        result.seconds, result.frames, result.elapsed, result.elapsed / max(result.seconds, 1e-9),
    )  # fmt: skip
    return [result.path, *files.values()]


def _progress() -> Any:
    """Logs the render's progress every tenth of the way."""
    shown = [-1]

    def report(done: int, total: int) -> None:
        tenth = done * 10 // total
        if tenth != shown[0]:
            shown[0] = tenth
            log.info("video: %d of %d frames", done, total)

    return report
