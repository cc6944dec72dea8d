"""A screenplay as a timeline: one shot per panel in reading order, each line timed, each shot's
camera move chosen. A value the user can save as JSON, edit and pass back (``timeline_from_json``
checks what comes back; ``schemas/timeline.schema.json`` is its contract).

How long a line lasts: its voice clip's length when there is one, otherwise its reading time in
its script (``reading_seconds``: Chinese, Japanese and Korean characters at ``chars_per_second``,
words of other scripts at ``words_per_second``), at least ``MIN_LINE``. Lines follow each other
with ``SAME_SPEAKER_GAP`` between two of one speaker and ``pause`` when the speaker changes; a
shot opens ``LEAD_IN`` before its first line and closes ``LEAD_OUT`` after its last. A shot lasts
at least ``min_shot``; a panel whose lines take longer than ``max_shot`` is cut into one shot per
group of lines that fits (the camera's move runs on across the cut), and a panel without lines is
a ``beat`` long. Crossfades between panels take no time of their own: the two shots blend around
their cut. The first shot's move starts and the last one's ends ``hold`` seconds from the video's
ends.
"""

from __future__ import annotations

import itertools
import json
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InputError
from ..page.lettered import lettered
from ..screenplay.models import (
    MAX_LINE,
    MAX_NAME,
    MAX_PANELS,
    MAX_TITLE,
    NARRATOR,
    Emotion,
    Id,
    JsonNumber,
    Language,
    Line,
    Screenplay,
)
from ..screenplay.schema import SCHEMAS_DIR, contract_schema_text, write_contract_schema
from ..screenplay.validate import json_path
from .camera import MAX_AMOUNT, Move, choose_move, move_amount
from .options import TimingOptions

MIN_LINE = 1.0  # seconds a line is shown at least, however short
SAME_SPEAKER_GAP = 0.15  # seconds between two lines of one speaker
LEAD_IN = 0.3  # seconds a shot shows before its first line
LEAD_OUT = 0.4  # and after its last
MAX_DURATION = 4 * 3600.0  # seconds; a timeline longer than this is refused (a chapter is minutes)
MAX_SHOTS = 4 * MAX_PANELS  # a panel cut into parts makes several shots

Seconds = Annotated[float, Field(ge=0, le=MAX_DURATION), JsonNumber]
Direction = Literal["rtl", "ltr"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Cue(_Strict):
    """One line on the timeline: when it is heard and shown, and what it says."""

    line: Id = Field(description="The screenplay line's id ('d1').")
    speaker: Id = Field(description="A character id, or 'narrator' for a caption.")
    name: Annotated[str, Field(max_length=MAX_NAME)] = Field(description="The speaker's name as shown.")
    emotion: Emotion
    text: Annotated[str, Field(min_length=1, max_length=MAX_LINE + 8)] = Field(
        description="The words as a balloon letters them: spoken, and shown as the subtitle."
    )
    start: Seconds
    end: Seconds
    voice: Annotated[str, Field(max_length=MAX_NAME)] = Field(
        "", description="The voice the series bible gives the speaker, for a TTS tool ('' if none)."
    )


class Shot(_Strict):
    """One shot: a panel's picture (or a part of a panel's lines) with its camera move."""

    panel: Id = Field(description="The screenplay panel's id ('p1').")
    image: Annotated[int, Field(ge=0, lt=MAX_PANELS), JsonNumber] = Field(
        description="Which picture: the panel's place in reading order, from 0."
    )
    start: Seconds
    end: Seconds
    move: Move
    amount: Annotated[float, Field(ge=0, le=MAX_AMOUNT), JsonNumber] = Field(
        description="How far the move goes: the zoom over 1 it reaches."
    )
    progress: Annotated[
        list[Annotated[float, Field(ge=0, le=1), JsonNumber]], Field(min_length=2, max_length=2)
    ] = Field(description="[from, to]: the part of the panel's move this shot runs (a panel cut in parts).")
    cues: list[Cue] = Field(max_length=64)


class Timeline(_Strict):
    """A motion comic's timing: shots in order, each with its lines."""

    version: Literal[1] = 1
    title: Annotated[str, Field(max_length=MAX_TITLE)]
    language: Language
    direction: Direction
    crossfade: Annotated[float, Field(ge=0, le=2), JsonNumber]
    hold: Annotated[float, Field(ge=0, le=5), JsonNumber]
    duration: Seconds
    shots: list[Shot] = Field(min_length=1, max_length=MAX_SHOTS)

    def cues(self) -> list[Cue]:
        """Every line in the order it is heard."""
        return [c for s in self.shots for c in s.cues]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def json_text(self) -> str:
        """The timeline file's text (``chapter.timeline.json``, Motion Comic's ``timeline``)."""
        return json.dumps(self.to_json(), ensure_ascii=False, indent=1) + "\n"


_WIDE_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")


def _is_cjk(ch: str) -> bool:
    if unicodedata.east_asian_width(ch) not in ("W", "F"):
        return False
    name = unicodedata.name(ch, "")
    return name.startswith(_WIDE_SCRIPTS) or "IDEOGRAPH" in name


def reading_seconds(text: str, timing: TimingOptions) -> float:
    """Seconds to read ``text``: its Chinese, Japanese and Korean characters at
    ``chars_per_second`` plus its words in other scripts at ``words_per_second`` (a text may mix
    them), at least ``MIN_LINE``. Punctuation and spaces count for nothing."""
    wide = sum(1 for ch in text if _is_cjk(ch))
    rest = "".join(" " if _is_cjk(ch) else ch for ch in text)
    words = sum(1 for w in rest.split() if any(ch.isalnum() for ch in w))
    seconds = wide / timing.chars_per_second + words / timing.words_per_second
    return round(max(MIN_LINE, seconds), 3)


def spoken_order(sp: Screenplay) -> list[str]:
    """The ids of the lines the panels carry, in the order they are heard (the voice script's)."""
    known = {line.id for line in sp.dialogue}
    return [i for panel in sp.panels for i in panel.dialogue if i in known]


def _names(sp: Screenplay) -> dict[str, str]:
    return {c.id: c.name for c in sp.characters}


def _groups(lines: Sequence[Line], lengths: Mapping[str, float], timing: TimingOptions) -> list[list[Line]]:
    """The panel's lines cut into groups that each fit one shot of at most ``max_shot`` (a line
    longer on its own is a group of one)."""
    groups: list[list[Line]] = []
    used = 0.0
    for line in lines:
        gap = _gap(groups[-1][-1], line, timing) if groups else 0.0
        need = lengths[line.id] + gap
        if groups and used + need + LEAD_OUT <= timing.max_shot:
            groups[-1].append(line)
            used += need
        else:
            groups.append([line])
            used = LEAD_IN + lengths[line.id]
    return groups


def _gap(before: Line, line: Line, timing: TimingOptions) -> float:
    return SAME_SPEAKER_GAP if before.speaker == line.speaker else timing.pause


def build_timeline(
    sp: Screenplay,
    timing: TimingOptions | None = None,
    voice_seconds: Mapping[str, float] | None = None,
    voices: Mapping[str, str] | None = None,
) -> Timeline:
    """The timeline of ``sp``: ``voice_seconds`` gives a line's length by its id where it has a
    voice clip (reading time otherwise); ``voices`` a speaker's voice name by character id (the
    series bible's)."""
    timing = timing or TimingOptions()
    voice_seconds = voice_seconds or {}
    voices = voices or {}
    by_id = {line.id: line for line in sp.dialogue}
    names = _names(sp)
    texts = {i: lettered(line.line, sp.language) for i, line in by_id.items()}  # as balloons letter them
    lengths = {i: reading_seconds(text, timing) for i, text in texts.items()}
    lengths.update({i: float(s) for i, s in voice_seconds.items() if i in lengths})
    shots: list[Shot] = []
    clock = 0.0
    for index, panel in enumerate(sp.panels):
        lines = [by_id[i] for i in panel.dialogue if i in by_id]
        groups = _groups(lines, lengths, timing) if lines else [[]]
        spans = [_span(g, lengths, timing) for g in groups]
        total = sum(spans)
        move = choose_move(panel.shot, panel.angle, timing.seed, panel.id)
        amount = move_amount(timing.camera, total) if move != "hold" else 0.0
        done = 0.0
        for group, span in zip(groups, spans, strict=True):
            cues = _cues(group, clock, lengths, timing, names, voices, texts)
            progress = [round(done / total, 4), round((done + span) / total, 4)]
            shots.append(
                Shot(
                    panel=panel.id,
                    image=index,
                    start=round(clock, 3),
                    end=round(clock + span, 3),
                    move=move,
                    amount=amount,
                    progress=progress,
                    cues=cues,
                )
            )
            clock += span
            done += span
    return checked(
        Timeline(
            title=sp.title,
            language=sp.language,
            direction=timing.direction,
            crossfade=timing.crossfade,
            hold=timing.hold,
            duration=round(clock, 3),
            shots=shots,
        )
    )


def _span(group: Sequence[Line], lengths: Mapping[str, float], timing: TimingOptions) -> float:
    if not group:
        return timing.beat
    spoken = sum(lengths[line.id] for line in group)
    gaps = sum(_gap(a, b, timing) for a, b in itertools.pairwise(group))
    return round(max(timing.min_shot, LEAD_IN + spoken + gaps + LEAD_OUT), 3)


def _cues(
    group: Sequence[Line],
    start: float,
    lengths: Mapping[str, float],
    timing: TimingOptions,
    names: Mapping[str, str],
    voices: Mapping[str, str],
    texts: Mapping[str, str],
) -> list[Cue]:
    cues = []
    at = start + LEAD_IN
    for i, line in enumerate(group):
        if i:
            at += _gap(group[i - 1], line, timing)
        name = "" if line.speaker == NARRATOR else names.get(line.speaker, line.speaker)
        cues.append(
            Cue(
                line=line.id,
                speaker=line.speaker,
                name=name,
                emotion=line.emotion,
                text=texts[line.id],
                start=round(at, 3),
                end=round(at + lengths[line.id], 3),
                voice=voices.get(line.speaker, ""),
            )
        )
        at += lengths[line.id]
    return cues


def checked(timeline: Timeline, source: str = "timeline") -> Timeline:
    """``timeline`` if its times agree: shots back to back from 0, each cue inside its shot and
    after the one before, the duration the last shot's end; else ``InputError`` naming each."""
    problems = []
    clock = 0.0
    for i, shot in enumerate(timeline.shots):
        if abs(shot.start - clock) > 1e-3:
            problems.append(f"shots[{i}].start is {shot.start:g}; the shot before ends at {clock:g}")
        if shot.end <= shot.start:
            problems.append(f"shots[{i}].end ({shot.end:g}) is not after its start ({shot.start:g})")
        if shot.progress[0] > shot.progress[1]:
            problems.append(f"shots[{i}].progress runs backwards: {shot.progress}")
        last = shot.start
        for j, cue in enumerate(shot.cues):
            where = f"shots[{i}].cues[{j}]"
            if cue.end <= cue.start:
                problems.append(f"{where}.end ({cue.end:g}) is not after its start ({cue.start:g})")
            if cue.start < last - 1e-3 or cue.end > shot.end + 1e-3:
                problems.append(
                    f"{where} ({cue.start:g}–{cue.end:g} s) is not inside its shot "
                    f"({shot.start:g}–{shot.end:g} s) after the cue before"
                )
            last = cue.end
        clock = shot.end
    if abs(timeline.duration - clock) > 1e-3:
        problems.append(f"duration is {timeline.duration:g}; the last shot ends at {clock:g}")
    if problems:
        listed = "\n".join(f"- {p}" for p in problems[:30])
        raise InputError(f"{source}'s times do not agree ({len(problems)} problems):\n{listed}")
    return timeline


def timeline_from_json(data: Any, source: str = "timeline") -> Timeline:
    """A timeline from its JSON value (as ``Timeline.to_json`` wrote it, maybe edited), checked:
    ``InputError`` lists each problem with its path."""
    if not isinstance(data, dict):
        raise InputError(f"{source} must be a JSON object with 'shots'; got {type(data).__name__}")
    try:
        broken = _surrogate_at(data)
    except RecursionError:
        raise InputError(
            f"{source} is nested too deeply to be a timeline; give one this pack wrote"
        ) from None
    if broken:
        raise InputError(
            f"{source}: {broken} holds a lone surrogate (a character cut in half, \\ud800–\\udfff), "
            "which no file can store; retype that text"
        )
    try:
        timeline = Timeline.model_validate(data)
    except ValidationError as e:
        listed = "\n".join(f"- {json_path(err['loc'])}: {err['msg']}" for err in e.errors()[:30])
        raise InputError(f"{source} is not a valid timeline:\n{listed}") from None
    return checked(timeline, source)


TIMELINE_SCHEMA_FILE = "timeline.schema.json"


def timeline_schema_text() -> str:
    """The exact text of ``schemas/timeline.schema.json``."""
    return contract_schema_text(Timeline)


def write_timeline_schema(folder: str | Path = SCHEMAS_DIR) -> Path:
    """Write ``timeline.schema.json`` into ``folder`` (the pack's ``schemas/``); returns the file."""
    return write_contract_schema(timeline_schema_text(), TIMELINE_SCHEMA_FILE, folder)


def _surrogate_at(value: Any, path: str = "") -> str:
    """The JSON path of the first text in ``value`` holding a lone surrogate ('' if none)."""
    if isinstance(value, str):
        return path or "a text" if any("\ud800" <= ch <= "\udfff" for ch in value) else ""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _surrogate_at(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}".lstrip("."))
        if found:
            return found
    return ""


def check_pictures(timeline: Timeline, count: int, what: str = "panel images") -> None:
    """``InputError`` unless ``count`` pictures are one per panel the timeline shows."""
    panels = max(s.image for s in timeline.shots) + 1
    if count != panels:
        raise InputError(f"{count} {what} for {panels} panels; give one picture per panel, in reading order")
