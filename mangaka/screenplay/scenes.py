"""Long chapters, scene by scene: where a chapter is split, and how many panels and lines each part gets.

A chapter is written in one call while it fits: its script prompt and the room its output needs fit
the model's context, it is at most ``scene_chars`` characters, and it needs at most
``MAX_SCENE_PANELS`` panels and ``MAX_SCENE_DIALOGUE`` lines. Otherwise it is split into scenes,
each written by calls of its own (``generate.py``), and the scenes are put together into one
screenplay with continuous ids.

Where a chapter is split (``split_scenes``), best first:

* **Scene breaks** always end a scene: a paragraph that is only a separator (``***``, ``* * *``,
  ``◇◇◇``, ``◆◆◆``, ``---``, ``###``, ``§``, ``〇〇〇``…) or two or more blank lines in a row.
* **Time or place shifts** at the start of a paragraph (``The next morning``, ``Meanwhile``,
  ``Three days later``; ``第二天``、``与此同时``、``三天后``; ``翌朝``、``その夜``、``一方``): a scene
  that must be cut ends before the last such paragraph in the second half of its room.
* Else **paragraph ends** (blank lines; single line breaks when the chapter has no blank line).

A paragraph is never cut: one that alone does not fit the context is an ``InputError`` naming
it, its token count and the room there is. Each scene after the first is given the last
``OVERLAP_SENTENCES`` sentences of the scene before it (as context, marked as already adapted)
and a short summary of the panels already written (``story_so_far``).

How many panels (``auto``): one per ``CJK_CHARS_PER_PANEL`` Chinese or Japanese characters, or per
``OTHER_CHARS_PER_PANEL`` characters of other scripts (about 140 English words), at least one,
at most ``MAX_PANELS`` for the chapter. How many lines (``auto``): the chapter's quoted lines
(quote marks as the source map finds them: ``mangaka/source/quotes.py``), at least half the
panels (captions carry narration) and at most two per panel. A fixed count is spread over the
scenes in proportion to their length (lines: to their quoted lines), at least one panel a scene.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..source import is_separator, source_map
from .models import MAX_DIALOGUE, MAX_PANELS, MAX_SCENE_DIALOGUE, MAX_SCENE_PANELS

AUTO = "auto"
CJK_CHARS_PER_PANEL = 200
OTHER_CHARS_PER_PANEL = 800
DEFAULT_SCENE_CHARS = 8000
OVERLAP_SENTENCES = 2
MAX_OVERLAP_CHARS = 300
MAX_SUMMARY_CHARS = 600
CAST_LINE_CHARS = (
    60  # a cast listing line ("- id: name — look"), for sizing a prompt before the cast is known
)
# Room kept for a scene's output, per panel and per line: a generous figure for a real model's JSON
# (a random-weight model writes longer strings, and gets whatever room is left).
OUTPUT_TOKENS_PER_PANEL = 400
OUTPUT_TOKENS_PER_LINE = 60
# A line whose words come from the chapter: its quote number, likely speaker, speaker and emotion.
OUTPUT_TOKENS_PER_QUOTED_LINE = 30
SHRINK = 0.7  # the scene limit's factor when a split's scenes still do not fit

_SHIFT = re.compile(
    r"^\s*(?:"
    # English
    r"(?:the\s+)?next\s+(?:morning|day|evening|night|week)|the\s+following\s+(?:morning|day|evening|night)"
    r"|later\s+(?:that|this|on)|that\s+(?:night|evening|morning|afternoon)|meanwhile|elsewhere"
    r"|(?:a|an|one|two|three|four|five|six|seven|several|a\s+few|many)\s+"
    r"(?:minutes?|hours?|days?|weeks?|months?|years?)\s+later"
    # Chinese
    r"|第二天|次日|翌日|隔天|当天晚上|当晚|那天晚上|那天夜里|那晚|与此同时|另一边|另一方面|不久之后|很久以后"
    r"|[一两二三四五六七八九十几数半]+(?:个)?(?:小时|天|日|周|星期|个月|月|年)(?:后|以后|之后)"
    # Japanese
    r"|翌朝|翌日|その夜|その日の夜|次の日|数日後|一方|その頃|[一二三四五六七八九十数]+(?:時間|日|週間|ヶ月|か月|年)後"
    r")",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？…])[\"'”’」』）)]*\s*")
_BLANK = re.compile(r"\n(?:[ \t\r\f\v\u3000]*\n)+")


def is_cjk(ch: str) -> bool:
    """A Chinese, Japanese or Korean character, CJK punctuation or a full-width form."""
    o = ord(ch)
    return (
        0x3000 <= o <= 0x303F  # CJK punctuation
        or 0x3040 <= o <= 0x30FF  # kana
        or 0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or 0xAC00 <= o <= 0xD7AF  # hangul
        or 0xFF00 <= o <= 0xFFEF  # full-width forms
        or 0x20000 <= o <= 0x3FFFF
    )


def story_units(text: str) -> float:
    """The text's length in CJK-character equivalents (other letters count a quarter each)."""
    cjk = sum(1 for ch in text if is_cjk(ch))
    other = sum(1 for ch in text if not ch.isspace() and not is_cjk(ch))
    return cjk + other * CJK_CHARS_PER_PANEL / OTHER_CHARS_PER_PANEL


def auto_panels(text: str) -> int:
    """Panels for ``text`` when the count is ``auto`` (see the module docstring)."""
    return max(1, min(MAX_PANELS, round(story_units(text) / CJK_CHARS_PER_PANEL)))


def auto_dialogue(text: str, language: str, panels: int, grounded: bool = False) -> int:
    """Dialogue lines for ``text`` with ``panels`` panels when the count is ``auto``: every quoted
    line (``grounded``: every balloon of them, uncapped, so none is dropped; a scene holds at most
    ``MAX_SCENE_DIALOGUE``, so a chapter with more is split), at least half the panels; without
    ``grounded``, at most two a panel."""
    quotes = quote_count(text, language, grounded)
    if grounded:
        return max(0, min(MAX_DIALOGUE, max(quotes, math.ceil(panels / 2))))
    return max(0, min(MAX_DIALOGUE, 2 * panels, max(quotes, math.ceil(panels / 2))))


def quote_count(text: str, language: str, grounded: bool = False) -> int:
    """The quoted lines of ``text`` (``grounded``: the balloons that letter them)."""
    found = source_map(text, language)
    return len(found.lines) if grounded else len(found.quotes)


# ---- paragraphs and breaks ----


@dataclass(frozen=True)
class Paragraph:
    index: int  # 0-based, in chapter order
    text: str
    separator: bool  # a scene separator line (no story text)
    hard_break_before: bool  # a separator or two blank lines come right before it
    shift: bool  # starts with a time or place shift

    def preview(self, n: int = 40) -> str:
        flat = " ".join(self.text.split())
        return flat if len(flat) <= n else flat[:n] + "…"


def paragraphs(chapter: str, language: str = "en") -> list[Paragraph]:
    """The chapter's paragraphs as its source map has them (``mangaka.source``): split at blank
    lines, or at line breaks when there is no blank line (never inside a quote of ``language``)."""
    out: list[Paragraph] = []
    previous_separator = False
    for p in source_map(chapter, language).paragraphs:
        piece = chapter[p.start : p.end].replace("\r\n", "\n").replace("\r", "\n")
        separator = is_separator(piece)
        out.append(
            Paragraph(
                index=len(out),
                text=piece,
                separator=separator,
                hard_break_before=p.hard_break_before or previous_separator,
                shift=bool(_SHIFT.match(piece)),
            )
        )
        previous_separator = separator
    return out


@dataclass(frozen=True)
class Scene:
    """One part of a chapter: paragraphs ``first..last`` (inclusive), its text (separators left
    out), the end of the scene before it (``overlap``), and its panel and line counts."""

    number: int  # 1-based
    first: int
    last: int
    text: str
    overlap: str = ""
    panels: int = 0
    dialogue: int = 0


def last_sentences(text: str, n: int = OVERLAP_SENTENCES, limit: int = MAX_OVERLAP_CHARS) -> str:
    """The last ``n`` sentences of ``text`` (at most ``limit`` characters, cut at the front)."""
    flat = " ".join(text.split())
    ends = [m.end() for m in _SENTENCE_END.finditer(flat) if m.end() < len(flat)]
    start = ends[-n] if len(ends) >= n else 0
    tail = flat[start:].strip()
    return tail if len(tail) <= limit else "…" + tail[-limit:]


def split_scenes(
    chapter: str,
    limit: float,
    *,
    size: Callable[[Paragraph], float] | None = None,
    room: float | None = None,
    language: str = "en",
) -> list[Scene]:
    """``chapter`` cut into scenes of at most ``limit`` (in ``size`` units; default characters),
    at the best breaks (module docstring). A paragraph larger than ``room`` (what can ever fit;
    default: no bound) is an ``InputError``; one larger than ``limit`` but within ``room`` is a
    scene of its own."""
    size = size or (lambda p: len(p.text))
    paras = paragraphs(chapter, language)
    story = [p for p in paras if not p.separator]
    if not story:
        raise InputError("chapter: has no paragraphs of text to split into scenes; give the chapter's text")
    if room is not None:
        for p in story:
            if size(p) > room:
                raise InputError(
                    f"chapter: paragraph {p.index + 1} ({p.preview()!r}) is {size(p):.0f} tokens, and one "
                    f"scene has room for {room:.0f}; a paragraph is never cut: break it into shorter "
                    "paragraphs (blank lines), or load the model with a larger context"
                )
    groups: list[list[Paragraph]] = [[]]
    for p in paras:  # hard breaks: separators and runs of blank lines end a scene
        if (p.separator or p.hard_break_before) and groups[-1]:
            groups.append([])
        if not p.separator:
            groups[-1].append(p)
    pieces = [piece for group in groups if group for piece in _cut(group, limit, size)]
    scenes: list[Scene] = []
    for k, piece in enumerate(pieces):
        # Scenes cover the paragraphs without a gap: a separator belongs to the scene after it.
        first = scenes[-1].last + 1 if scenes else 0
        last = len(paras) - 1 if k == len(pieces) - 1 else piece[-1].index
        text = "\n\n".join(p.text for p in piece)
        overlap = last_sentences(scenes[-1].text) if scenes else ""
        scenes.append(Scene(k + 1, first, last, text, overlap))
    return scenes


def _cut(group: list[Paragraph], limit: float, size: Callable[[Paragraph], float]) -> list[list[Paragraph]]:
    """One hard-break group cut into as few pieces of at most ``limit`` as it needs, of about equal
    size: each cut at the paragraph end nearest an equal share, a time/place shift preferred."""
    out: list[list[Paragraph]] = []
    rest = list(group)
    while rest:
        total = sum(size(p) for p in rest)
        if total <= limit or len(rest) == 1:
            out.append(rest)
            break
        target = total / math.ceil(total / limit)
        best: tuple[float, int] | None = None
        running = 0.0
        for i, p in enumerate(rest[:-1], 1):
            running += size(p)
            if running > limit and i > 1:
                break
            score = abs(running - target)
            if rest[i].shift and running >= target / 2:
                score -= target / 4  # a scene that starts at a time or place shift reads better
            if best is None or score < best[0]:
                best = (score, i)
        cut = best[1] if best else 1
        out.append(rest[:cut])
        rest = rest[cut:]
    return out


# ---- counts per scene ----


def spread(total: int, weights: Sequence[float], low: int, high: int) -> list[int] | None:
    """``total`` spread over ``weights`` in proportion, each in ``[low, high]`` (largest remainders;
    a share outside the bounds is set to the bound and the rest spread again); ``None`` when no
    such spread exists."""
    n = len(weights)
    if not low * n <= total <= high * n:
        return None
    weights = [max(w, 1e-9) for w in weights]
    fixed: dict[int, int] = {}
    while True:
        free = [i for i in range(n) if i not in fixed]
        if not free:
            break
        left = total - sum(fixed.values())
        wsum = sum(weights[i] for i in free)
        quota = {i: left * weights[i] / wsum for i in free}
        # Caps first: capping lowers the others' shares, so it may push one under ``low``, never
        # over ``high``; raising one to ``low`` lowers the others, so no cap is missed after it.
        over = [i for i in free if quota[i] > high]
        under = [i for i in free if quota[i] < low]
        if over:
            fixed.update(dict.fromkeys(over, high))
        elif under:
            fixed.update(dict.fromkeys(under, low))
        else:
            break
    counts = [fixed.get(i, 0) for i in range(n)]
    free = [i for i in range(n) if i not in fixed]
    for i in free:
        counts[i] = int(quota[i])
    rest = total - sum(counts)
    for i in sorted(free, key=lambda i: (quota[i] - int(quota[i]), -i), reverse=True)[:rest]:
        counts[i] += 1
    return counts


def scene_counts(
    scenes: list[Scene],
    panels: int | str,
    dialogue: int | str,
    language: str,
    *,
    clamp: bool = False,
    grounded: bool = False,
) -> list[tuple[int, int]] | None:
    """Each scene's (panels, lines) for the chapter's ``panels`` and ``dialogue`` (a count or
    ``auto``); ``None`` when a scene would need more than one call allows (split smaller), unless
    ``clamp`` (the scenes cannot get smaller): then ``auto`` counts are cut to what one call writes
    and a fixed count that cannot be spread is an ``InputError``."""
    texts = [s.text for s in scenes]
    if panels == AUTO:
        wanted = [auto_panels(t) for t in texts]
        while sum(wanted) > MAX_PANELS:  # the chapter's bound: take from the largest scenes
            wanted[wanted.index(max(wanted))] -= 1
        if max(wanted) > MAX_SCENE_PANELS:
            if not clamp:
                return None
            wanted = [min(n, MAX_SCENE_PANELS) for n in wanted]
        panel_counts = wanted
    else:
        assert isinstance(panels, int)
        found = spread(panels, [story_units(t) for t in texts], 1, MAX_SCENE_PANELS)
        if found is None:
            if panels < len(scenes):
                raise InputError(
                    f"panels: {panels} is fewer than the {len(scenes)} scenes this chapter is written in "
                    "(it does not fit one call); ask for at least that many panels, or 'auto'"
                )
            if clamp:
                raise InputError(
                    f"panels: {panels} is more than {len(scenes)} scenes of at most {MAX_SCENE_PANELS} "
                    "panels can hold; ask for fewer panels, or 'auto'"
                )
            return None
        panel_counts = found
    if dialogue == AUTO:
        line_counts = [
            auto_dialogue(t, language, n, grounded) for t, n in zip(texts, panel_counts, strict=True)
        ]
        while sum(line_counts) > MAX_DIALOGUE:
            line_counts[line_counts.index(max(line_counts))] -= 1
        if max(line_counts) > MAX_SCENE_DIALOGUE:
            if not clamp:
                return None
            line_counts = [min(n, MAX_SCENE_DIALOGUE) for n in line_counts]
    else:
        assert isinstance(dialogue, int)
        weights = [
            quote_count(t, language, grounded) + 0.1 * story_units(t) / CJK_CHARS_PER_PANEL for t in texts
        ]
        found = spread(dialogue, weights, 0, MAX_SCENE_DIALOGUE)
        if found is None:
            if clamp:
                raise InputError(
                    f"dialogue: {dialogue} lines is more than {len(scenes)} scenes of at most "
                    f"{MAX_SCENE_DIALOGUE} lines can hold; ask for fewer lines, or 'auto'"
                )
            return None
        line_counts = found
    return list(zip(panel_counts, line_counts, strict=True))


def story_so_far(actions: Sequence[str], limit: int = MAX_SUMMARY_CHARS) -> str:
    """A short summary of the panels already written: their actions, the latest kept when too long."""
    kept: list[str] = []
    used = 0
    for action in reversed(actions):
        flat = " ".join(action.split())
        if used + len(flat) + 1 > limit and kept:
            kept.append("…")
            break
        kept.append(flat)
        used += len(flat) + 1
    return " ".join(reversed(kept))
