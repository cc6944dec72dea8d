"""Screenplay → Stable Diffusion prompts: deterministic, one positive prompt per panel.

Each panel's prompt is built from fragments in priority order, so what matters most sits in the
first 75-token CLIP chunk:

1. the style preset's positive fragments;
2. how many people are shown (tags mode) and the camera: shot type, then angle;
3. each character shown, from the character bible: LoRA trigger, canonical appearance, and the
   expression of the emotions of that character's lines in the panel;
4. the action;
5. the panel's expression text (faces and body language);
6. props;
7. background;
8. lighting.

Two modes: ``tags`` (comma-separated tags, for SD1.5, SDXL and Illustrious/Pony-style
checkpoints) and ``natural`` (sentences, for Flux, SD3 and Qwen-Image-style models). The same
screenplay, style, mode and bible always give the same prompts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..screenplay.models import NARRATOR, Panel, Screenplay
from .bible import CharacterBible, build_bible
from .clip import CHUNK, chunks, estimate_clip_tokens
from .presets import Style, check_mode, load_style, term_natural, term_tags

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class PanelPrompt:
    id: str
    positive: str
    caption: str  # the narrator's caption-box text in this panel ("" when none)
    dialogue: str  # the spoken lines, one per line: "Name: words"
    characters: tuple[str, ...]
    clip_tokens: int

    @property
    def clip_chunks(self) -> int:
        return chunks(self.clip_tokens)


@dataclass
class CompiledPrompts:
    style: str
    mode: str
    negative: str
    panels: list[PanelPrompt]
    warnings: list[str] = field(default_factory=list)
    token_counter: str = "estimate"

    def report(self) -> str:
        """A short human-readable summary: one line per panel with its CLIP token count."""
        head = (
            f"{len(self.panels)} panels · style {self.style} · {self.mode} mode · "
            f"CLIP tokens ({self.token_counter})"
        )
        rows = [
            f"{p.id}: {p.clip_tokens} tokens"
            + (f" ({p.clip_chunks} chunks of {CHUNK})" if p.clip_chunks > 1 else "")
            for p in self.panels
        ]
        return "\n".join([head, *rows, *(f"warning: {w}" for w in self.warnings)])


def _dedupe(fragments: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for f in fragments:
        key = f.casefold()
        if f and key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" ,;")


def _sentence(text: str) -> str:
    text = _clean(text)
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?。！？" else text + "."


def _emotions(screenplay: Screenplay, panel: Panel, character_id: str) -> list[str]:
    found: list[str] = []
    for line in screenplay.lines_of(panel):
        if line.speaker == character_id and line.emotion != "narration" and line.emotion not in found:
            found.append(line.emotion)
    return found[:2]


def _count_key(n: int) -> str:
    return str(n) if n <= 2 else "many"


def _tags_prompt(screenplay: Screenplay, panel: Panel, style: Style, bible: CharacterBible) -> list[str]:
    fragments = list(style.positive_tags)
    fragments += term_tags("count", _count_key(len(panel.characters)))
    fragments += term_tags("shot", panel.shot) + term_tags("angle", panel.angle)
    for cid in panel.characters:
        entry = bible[cid]
        if entry.trigger:
            fragments.append(entry.trigger)
        fragments += [_clean(t) for t in entry.appearance.split(",")]
        for emotion in _emotions(screenplay, panel, cid):
            fragments += term_tags("emotion", emotion)
    fragments.append(_clean(panel.action).rstrip("."))
    fragments.append(_clean(panel.expression).rstrip("."))
    fragments += [_clean(p) for p in panel.props]
    fragments.append(_clean(panel.background).rstrip("."))
    fragments.append(_clean(panel.lighting).rstrip("."))
    return _dedupe(fragments)


def _natural_prompt(screenplay: Screenplay, panel: Panel, style: Style, bible: CharacterBible) -> list[str]:
    sentences = [style.positive_natural]
    sentences.append(_sentence(f"{term_natural('shot', panel.shot)}, {term_natural('angle', panel.angle)}"))
    for cid in panel.characters:
        entry = bible[cid]
        label = f"{entry.name} ({entry.trigger})" if entry.trigger else entry.name
        sentences.append(_sentence(f"{label}: {entry.appearance}"))
        feelings = [term_natural("emotion", e) for e in _emotions(screenplay, panel, cid)]
        if feelings:
            sentences.append(_sentence(f"{entry.name} is {' and '.join(feelings)}"))
    sentences.append(_sentence(panel.action))
    sentences.append(_sentence(panel.expression))
    if panel.props:
        sentences.append(_sentence("In view: " + ", ".join(_clean(p) for p in panel.props)))
    sentences.append(_sentence(f"Setting: {panel.background}"))
    if panel.lighting.strip():
        sentences.append(_sentence(f"Lighting: {panel.lighting}"))
    return [s for s in sentences if s]


def _lines(screenplay: Screenplay, panel: Panel) -> tuple[str, str]:
    captions, spoken = [], []
    for line in screenplay.lines_of(panel):
        if line.speaker == NARRATOR:
            captions.append(line.line)
        else:
            who = screenplay.character(line.speaker)
            spoken.append(f"{who.name if who else line.speaker}: {line.line}")
    return "\n".join(captions), "\n".join(spoken)


def compile_prompts(
    screenplay: Screenplay,
    *,
    style: str,
    mode: str = "tags",
    bible: CharacterBible | None = None,
    count_tokens: TokenCounter | None = None,
    token_counter: str = "estimate",
    balloon_room: bool | None = None,
) -> CompiledPrompts:
    """Every panel's positive prompt, caption and dialogue, and the one negative prompt.

    ``bible`` defaults to the screenplay's own cast; ``count_tokens`` defaults to the CLIP
    estimate (pass ``ClipTokenizer(...).count`` and ``token_counter="CLIP BPE"`` for exact counts).
    ``balloon_room``: a panel with lines asks for empty space for its balloons, in the style's
    words, right after the style's own (None: as the style decides).
    """
    check_mode(mode)
    preset = load_style(style)
    bible = bible or build_bible(screenplay)
    count = count_tokens or estimate_clip_tokens
    build = _tags_prompt if mode == "tags" else _natural_prompt
    joiner = ", " if mode == "tags" else " "
    out = CompiledPrompts(style, mode, preset.negative(mode), [], list(bible.warnings), token_counter)
    if mode == "tags" and screenplay.language != "en":
        out.warnings.append(
            f"the screenplay is written in {screenplay.language}: its descriptions stay in that language, "
            "which CLIP-based checkpoints (SD1.5, SDXL) read poorly; natural mode suits models with a "
            "multilingual text encoder (Qwen-Image), or write the screenplay in English"
        )
    room = preset.room_default if balloon_room is None else balloon_room
    for panel in screenplay.panels:
        fragments = build(screenplay, panel, preset, bible)
        if room and screenplay.lines_of(panel):
            at = len(preset.positive(mode))
            words = list(preset.room_tags) if mode == "tags" else [preset.room_natural]
            fragments = _dedupe([*fragments[:at], *words, *fragments[at:]])
        positive = joiner.join(fragments)
        caption, dialogue = _lines(screenplay, panel)
        prompt = PanelPrompt(panel.id, positive, caption, dialogue, tuple(panel.characters), count(positive))
        if prompt.clip_tokens > CHUNK:
            first_late = next(
                f for i, f in enumerate(fragments) if count(joiner.join(fragments[: i + 1])) > CHUNK
            )
            out.warnings.append(
                f"{panel.id}: {prompt.clip_tokens} CLIP tokens in {prompt.clip_chunks} chunks; from "
                f"{first_late[:40]!r} on, the prompt is past the first {CHUNK} tokens and weighs less"
            )
        out.panels.append(prompt)
    return out
