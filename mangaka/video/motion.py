"""A motion comic from a screenplay: the timeline, the video, its subtitles, its voice script.

``plan_motion_comic`` checks every input and times the chapter (nothing is drawn or written);
``write_motion_comic`` renders the video and writes the files beside it: for ``chapter.mp4``,
``chapter.srt``, ``chapter.ass``, ``chapter.voice.csv`` and ``chapter.timeline.json`` (the
timeline, to edit and pass back). The video is written first and the rest only once it is
whole, each file atomically: a failed or stopped render leaves none of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from ..errors import InputError
from ..fileio import write_atomic
from ..screenplay.models import Screenplay
from .audio import Clip
from .options import RenderOptions, TimingOptions
from .render import VideoResult, check_pictures_fit, write_video
from .subtitles import write_subtitles
from .timeline import Timeline, build_timeline, check_pictures
from .voice import write_voice_script

log = logging.getLogger(__name__)

CLIP_SLACK = 0.05  # seconds a voice clip may run past its cue's end in an edited timeline


@dataclass(frozen=True)
class MotionPlan:
    """Everything a render needs, checked: the timeline, one picture per panel, the clips."""

    timeline: Timeline
    pictures: Sequence[Image.Image]
    clips: Mapping[str, Clip] = field(default_factory=dict)
    music: Clip | None = None


def side_files(output: Path) -> dict[str, Path]:
    """The files written beside the video ``output``, by what they are."""
    stem = output.with_suffix("")  # chapter.v2.mp4 → chapter.v2.srt, as the writers name them
    return {
        "subtitles (SRT)": Path(f"{stem}.srt"),
        "subtitles (ASS)": Path(f"{stem}.ass"),
        "voice script": Path(f"{stem}.voice.csv"),
        "timeline": Path(f"{stem}.timeline.json"),
    }


def plan_motion_comic(
    sp: Screenplay,
    pictures: Sequence[Image.Image],
    timing: TimingOptions | None = None,
    clips: Mapping[str, Clip] | None = None,
    music: Clip | None = None,
    voices: Mapping[str, str] | None = None,
    timeline: Timeline | None = None,
) -> MotionPlan:
    """The checked plan: ``timeline`` when given (an edited one, its lines checked against the
    screenplay's and the clips), else one built from ``sp`` with the clips' lengths."""
    clips = dict(clips or {})
    known = {line.id for line in sp.dialogue}
    unknown = sorted(set(clips) - known)
    if unknown:
        raise InputError(
            f"voice clips for lines the screenplay does not have: {', '.join(unknown)}; "
            f"its lines are {_range(sp)}"
        )
    if timeline is None:
        timeline = build_timeline(sp, timing, {k: c.seconds for k, c in clips.items()}, voices)
    else:
        _check_against(timeline, sp, clips)
    check_pictures(timeline, len(pictures))
    check_pictures_fit(pictures)
    return MotionPlan(timeline, pictures, clips, music)


def _range(sp: Screenplay) -> str:
    ids = [line.id for line in sp.dialogue]
    return f"{ids[0]} … {ids[-1]}" if ids else "none"


def _check_against(timeline: Timeline, sp: Screenplay, clips: Mapping[str, Clip]) -> None:
    """An edited timeline still fits the screenplay (its panels, its lines) and the clips."""
    panels = [p.id for p in sp.panels]
    for i, shot in enumerate(timeline.shots):
        if shot.image >= len(panels) or panels[shot.image] != shot.panel:
            raise InputError(
                f"timeline shots[{i}] shows panel {shot.panel!r} as image {shot.image}, but the screenplay's "
                f"panel {shot.image + 1} is {panels[shot.image] if shot.image < len(panels) else 'missing'}; "
                "make the timeline from this screenplay again"
            )
    for cue in timeline.cues():
        clip = clips.get(cue.line)
        if clip is not None and clip.seconds > cue.end - cue.start + CLIP_SLACK:
            raise InputError(
                f"the voice clip of line {cue.line} is {clip.seconds:.2f} s, but its cue in the timeline is "
                f"{cue.end - cue.start:.2f} s; lengthen the cue, or build the timeline again with the clips"
            )


def write_motion_comic(
    plan: MotionPlan,
    output: Path,
    options: RenderOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> tuple[VideoResult, dict[str, Path]]:
    """Renders ``plan`` to ``output`` and writes the side files; the result and the files by what
    they are."""
    options = options or RenderOptions()
    result = write_video(
        plan.timeline, plan.pictures, output, options, plan.clips, plan.music, progress, cancelled
    )
    files = side_files(output)
    stem = output.with_suffix("")
    write_subtitles(plan.timeline, options.frame_size, stem)
    write_voice_script(plan.timeline, stem)
    write_atomic(files["timeline"], plan.timeline.json_text())
    return result, files
