"""Motion Comic: a screenplay, its panel images (storyboard cards when none), voice clips and
music → ComfyUI's own VIDEO (so core Save Video and every video node downstream take it), with
the subtitles, the voice script and the timeline as text."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from comfy_api.latest import io

from ..mangaka.errors import InputError
from ..mangaka.fileio import parse_json
from ..mangaka.options import widget_names
from ..mangaka.video.audio import MAX_MUSIC_SECONDS, clip_from_waveform, clips_in_order
from ..mangaka.video.motion import plan_motion_comic
from ..mangaka.video.options import VIDEO_OPTIONS, render_from, timing_from
from ..mangaka.video.pictures import StoryboardCards
from ..mangaka.video.render import write_video
from ..mangaka.video.subtitles import srt
from ..mangaka.video.timeline import build_timeline, spoken_order, timeline_from_json
from ..mangaka.video.voice import voice_rows, voice_script_csv, voice_script_text, voices_from_bible
from . import _comfy
from ._comfy import from_widgets, widget
from .bible import bible_inputs, read_series_bible
from .compose import read_screenplay, screenplay_inputs
from .page import _one, _to_pil

log = logging.getLogger("mangaka")

NODE = "Motion Comic"
VIDEO_WIDGETS = widget_names(VIDEO_OPTIONS)
FIX_TIMELINE = "connect this node's timeline output"


def _video_type() -> type:
    """ComfyUI's VIDEO made from a file: ``InputImpl.VideoFromFile`` (comfy_api.latest), or where
    an older ComfyUI keeps it."""
    try:
        from comfy_api.latest import InputImpl

        return InputImpl.VideoFromFile
    except ImportError:
        from comfy_api.input_impl import VideoFromFile

        return VideoFromFile


@contextlib.contextmanager
def _named(name: str = "") -> Iterator[None]:
    """An ``InputError`` raised inside says the node and the input it is about (``name``)."""
    try:
        yield
    except InputError as exc:
        raise InputError(f"{NODE}: {name + ': ' if name else ''}{exc}") from None


def _waveforms(audio: list | None) -> list[tuple[object, int]]:
    """ComfyUI AUDIO values (``{"waveform": [B, C, N], "sample_rate": n}``) → (array, rate) each,
    one per clip (a batch of B clips is B clips)."""
    out = []
    for item in audio or []:
        if not isinstance(item, dict) or "waveform" not in item or "sample_rate" not in item:
            raise InputError("an item is not ComfyUI AUDIO (a dict with waveform and sample_rate)")
        wave = item["waveform"].detach().cpu().float().numpy()
        rate = int(item["sample_rate"])
        if wave.ndim == 3:
            out.extend((wave[b], rate) for b in range(wave.shape[0]))
        else:
            out.append((wave, rate))
    return out


class MotionComic(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaMotionComic",
            display_name="Motion Comic",
            category="Mangaka",
            description="A motion comic (漫剧) from a screenplay: one timed shot per panel with a camera "
            "move, subtitles and voice, as a VIDEO for Save Video.",
            is_input_list=True,
            inputs=[
                *screenplay_inputs(),
                io.Image.Input(
                    "images",
                    optional=True,
                    tooltip="Panel images, one per panel in reading order (a batch or a list). Not "
                    "connected: the storyboard cards",
                ),
                io.Audio.Input(
                    "voice",
                    optional=True,
                    tooltip="Voice clips, one per dialogue line in dialogue order (a list, or a batch), "
                    "e.g. from a TTS node fed the voice script",
                ),
                io.Audio.Input("music", optional=True, tooltip="Music under the voices (looped, lowered)"),
                *(widget(o) for o in VIDEO_OPTIONS.values()),
                *bible_inputs(),  # the voice names the timeline's lines carry
                io.String.Input(
                    "timeline",
                    optional=True,
                    force_input=True,
                    tooltip="A timeline JSON (this node's timeline output, edited) to use as it is",
                ),
            ],
            outputs=[
                io.Video.Output(display_name="video"),
                io.String.Output(display_name="subtitles_srt"),
                io.String.Output(display_name="voice_script"),
                io.String.Output(display_name="timeline"),
            ],
        )

    @classmethod
    def execute(cls, images=None, voice=None, music=None, timeline=None, **kw) -> io.NodeOutput:
        fields = from_widgets(VIDEO_OPTIONS, {name: _one(value) for name, value in kw.items()})
        try:
            timing, render = timing_from(fields), render_from(fields)
        except InputError as exc:
            raise InputError(f"{NODE}: {exc.renamed(VIDEO_WIDGETS)}") from None
        sp = read_screenplay(_one(kw.get("screenplay")), _one(kw.get("json_text")), NODE)
        edited = _one(timeline)
        plan_timeline = None
        if edited:
            source = f"{NODE}: timeline"
            plan_timeline = timeline_from_json(parse_json(edited, source, FIX_TIMELINE), source)
        pictures = _to_pil(images) if images else StoryboardCards(sp)
        with _named("voice"):
            clips = clips_in_order(_waveforms(voice), spoken_order(sp)) if voice else {}
        with _named("music"):
            tracks = _waveforms(music)
            if len(tracks) > 1:
                raise InputError(f"takes one track; {len(tracks)} were connected")
            music_clip = clip_from_waveform(*tracks[0], "the track", MAX_MUSIC_SECONDS) if tracks else None
        voices = _voices(_one(kw.get("bible")), _one(kw.get("bible_file")))
        with _named():
            plan = plan_motion_comic(sp, pictures, timing, clips, music_clip, voices, plan_timeline)
        output = _comfy.unique_temp_path("mangaka_motion", ".mp4")
        try:
            with _comfy.comfy_interrupts():
                write_video(
                    plan.timeline, plan.pictures, output, render, plan.clips, plan.music,
                    _comfy.progress(), _comfy.cancel_requested(),
                )  # fmt: skip
        except BaseException:
            output.unlink(missing_ok=True)  # the empty placeholder unique_temp_path made: nothing is left
            raise
        script = voice_script_text(plan.timeline)
        text = plan.timeline.json_text()
        return io.NodeOutput(_video_type()(str(output)), srt(plan.timeline), script, text)


class VoiceScript(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaVoiceScript",
            display_name="Voice Script",
            category="Mangaka",
            description="The screenplay's lines to speak, one per line in dialogue order, as lists: a TTS "
            "node after it runs once per line, and its clips go to Motion Comic's voice in order.",
            inputs=[*screenplay_inputs(), *bible_inputs()],
            outputs=[
                io.String.Output(display_name="texts", is_output_list=True),
                io.String.Output(display_name="line_ids", is_output_list=True),
                io.String.Output(display_name="speakers", is_output_list=True),
                io.String.Output(display_name="emotions", is_output_list=True),
                io.String.Output(display_name="voices", is_output_list=True),
                io.String.Output(display_name="script_csv"),
            ],
        )

    @classmethod
    def execute(cls, screenplay=None, json_text=None, bible=None, bible_file=None) -> io.NodeOutput:
        sp = read_screenplay(screenplay, json_text, "Voice Script")
        timeline = build_timeline(sp, voices=_voices(bible, bible_file))
        rows = voice_rows(timeline)
        if not rows:
            raise InputError("Voice Script: the screenplay has no dialogue lines to speak")
        columns = [[str(r[k]) for r in rows] for k in ("text", "line", "name", "emotion", "voice")]
        columns[2] = [r["name"] or r["speaker"] for r in rows]  # the narrator has no display name
        return io.NodeOutput(*columns, voice_script_csv(timeline))


def _voices(bible: str | None, bible_file: str | None) -> dict[str, str]:
    """The voice name the series bible gives each character (none without a bible)."""
    found = read_series_bible(bible, bible_file)
    return voices_from_bible(found) if found is not None else {}


NODES = [MotionComic, VoiceScript]
