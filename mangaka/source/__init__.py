"""The source map of a chapter: the one value that scenes, prompts, repairs, reports and ``eval``
read about the chapter's own text.

``SourceMap.of(chapter, language)`` (computed once per chapter and language, in linear time):

- **units**, numbered from 1: the chapter's paragraphs (split at blank lines; at line breaks when
  the chapter has no blank line, never inside a quote), a paragraph longer than
  ``MAX_UNIT_CHARS`` (``MAX_UNIT_CJK_CHARS`` for Chinese and Japanese) cut at sentence ends
  outside quotes. Units tile the chapter: every character lies in exactly one unit (the spaces and
  blank lines after a paragraph belong to it, the text before the first paragraph to the first);
- **quotes**, numbered from 1: each quoted line (``quotes.py``: the marks per language), with its
  unit, and its speaker (``evidence.py``): a name with the evidence, or ``None``;
- **lines**, numbered from 1: the quotes as the balloons that letter them, a quote longer than a
  balloon (``MAX_LINE``) in several consecutive parts cut at sentence ends, nothing dropped;
- **names**: the cast candidates, strongest first (``speakers.py``);
- **title**: the chapter's heading, verbatim, when it opens with one (``heading.py``).

Each quote's speaker comes with its evidence and whether the text is sure (``evidence.py``).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from .dashes import BLANK_LINE
from .evidence import QuotePlace, Speaker, speakers_of
from .heading import heading
from .kinds import quote_kind
from .quotes import MAX_QUOTE_CHARS, QUOTE_MARKS, balloon_parts, find_quote_spans, find_quotes, narration
from .speakers import NameCandidate, attribution, find_names

__all__ = [
    "MAX_QUOTE_CHARS",
    "QUOTE_MARKS",
    "NameCandidate",
    "Paragraph",
    "Quote",
    "SourceLine",
    "SourceMap",
    "Speaker",
    "Unit",
    "find_quote_spans",
    "find_quotes",
    "is_separator",
    "narration",
    "source_map",
    "spoken_quotes",
]

MAX_UNIT_CHARS = 1200
MAX_UNIT_CJK_CHARS = 400
BALLOON_CHARS = 120  # a balloon's text, the screenplay's MAX_LINE (kept equal by a test)
MAX_TITLE = 80  # a screenplay's title (kept equal by a test)

_NEWLINE = re.compile(r"\r\n|\r|\n")
_SEPARATOR = re.compile(r"^[\s*＊#＃\-—–=~～_·・•◇◆○●〇☆★□■◎※§♦♢✽✻✦✧]+$")
_SENTENCE = re.compile(r"[.!?。！？…]+[\"'”’」』）)]*\s*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_WORDS = re.compile(r"\w")  # a letter or a digit: a paragraph with narration


@dataclass(frozen=True)
class Paragraph:
    """A paragraph's text span (line breaks around it excluded) and whether a hard break (two
    blank lines or more) comes right before it."""

    start: int
    end: int
    hard_break_before: bool


@dataclass(frozen=True)
class Unit:
    number: int  # 1-based
    start: int
    end: int  # units tile the chapter: the next unit starts here
    paragraph: int  # 0-based index of its paragraph


@dataclass(frozen=True)
class Quote:
    number: int  # 1-based
    start: int  # the inside of the marks
    end: int
    unit: int
    text: str
    hint: str | None  # who says it, from the text (a name), or None
    attributed: bool  # the hint is an attribution next to the quote
    evidence: str | None = None  # why (``evidence.py``): attribution, pronoun, beat, continuation, …
    sure: bool = False  # the text settles it: forced in the script call
    kind: str = "speech"  # or a sign/headline/title ("sign") or a scare quote ("scare"): ``kinds.py``


@dataclass(frozen=True)
class SourceLine:
    """One balloon of a quote: the whole quote, or one part of a long one."""

    number: int  # 1-based, across the chapter
    quote: int
    part: int
    parts: int
    text: str
    unit: int


@dataclass(frozen=True)
class SourceMap:
    text: str
    language: str
    paragraphs: tuple[Paragraph, ...]
    units: tuple[Unit, ...]
    quotes: tuple[Quote, ...]
    lines: tuple[SourceLine, ...]
    names: tuple[NameCandidate, ...]
    title: str | None = None  # the chapter's heading, verbatim (``heading.py``), or None

    @classmethod
    def of(cls, text: str, language: str) -> SourceMap:
        return source_map(text, language)

    def unit_text(self, number: int) -> str:
        u = self.units[number - 1]
        return self.text[u.start : u.end].strip()

    def unit_at(self, position: int) -> int:
        """The number of the unit holding character ``position``."""
        starts = [u.start for u in self.units]
        return bisect.bisect_right(starts, position)

    def units_of_paragraphs(self, first: int, last: int) -> tuple[int, int]:
        """The first and last unit numbers of paragraphs ``first..last`` (0-based, inclusive)."""
        numbers = [u.number for u in self.units if first <= u.paragraph <= last]
        return numbers[0], numbers[-1]

    def lines_in(self, first: int, last: int) -> list[SourceLine]:
        """The balloon lines of the quotes in units ``first..last`` (inclusive), in order."""
        return [line for line in self.lines if first <= line.unit <= last]

    def quote_of(self, line: int) -> Quote:
        return self.quotes[self.lines[line - 1].quote - 1]


def _paragraph_spans(text: str, quotes: list[tuple[int, int]]) -> list[Paragraph]:
    if BLANK_LINE.search(text):
        breaks = [
            (m.start(), m.end(), len(_NEWLINE.findall(m.group())) > 2) for m in BLANK_LINE.finditer(text)
        ]
    else:  # one paragraph a line, but a quote running over a line break stays whole
        starts = [a for a, _ in quotes]
        breaks = []
        for m in _NEWLINE.finditer(text):
            k = bisect.bisect_right(starts, m.start()) - 1
            if k < 0 or quotes[k][1] <= m.start():
                breaks.append((m.start(), m.end(), False))
    out: list[Paragraph] = []
    pos, hard = 0, False
    for a, b, hard_break in [*breaks, (len(text), len(text), False)]:
        piece = text[pos:a]
        lead = len(piece) - len(piece.lstrip("\r\n"))
        tail = len(piece.rstrip("\r\n"))
        if piece.strip():
            out.append(Paragraph(pos + lead, pos + tail, hard))
            hard = False
        hard = hard or hard_break
        pos = b
    return out


def _narrated(text: str, paragraphs: list[Paragraph], spans: list[tuple[int, int]]) -> list[int]:
    """For each paragraph, the start of the last paragraph before it with narration (words outside
    its quotes), or -1."""
    starts = [a for a, _ in spans]
    out, last = [], -1
    for p in paragraphs:
        out.append(last)
        lo, hi = bisect.bisect_left(starts, p.start), bisect.bisect_left(starts, p.end)
        inside = [(a - p.start, b - p.start) for a, b in spans[lo:hi]]
        if _WORDS.search(narration(text[p.start : p.end], inside).replace("…", "")):
            last = p.start
    return out


def _unit_starts(text: str, paragraph: Paragraph, quotes: list[tuple[int, int]], cjk: bool) -> list[int]:
    """Where a long paragraph's units start (its own start first): sentence ends outside quotes."""
    limit = MAX_UNIT_CJK_CHARS if cjk else MAX_UNIT_CHARS
    starts = [paragraph.start]
    if paragraph.end - paragraph.start <= limit:
        return starts
    q = bisect.bisect_left(quotes, (paragraph.start, paragraph.start))
    last_end: int | None = None
    for m in _SENTENCE.finditer(text, paragraph.start, paragraph.end):
        end = m.end()
        while q < len(quotes) and quotes[q][1] < end - 1:
            q += 1
        inside = q < len(quotes) and quotes[q][0] <= m.start() < quotes[q][1]
        if not inside and q < len(quotes) and quotes[q][0] - 1 < end:
            end = quotes[q][0] - 1  # the end ran on into a quote's opening mark: cut before the mark
        if inside or end >= paragraph.end:
            continue
        if end - starts[-1] > limit and last_end is not None and last_end > starts[-1]:
            starts.append(last_end)
        last_end = end
    return starts


@lru_cache(maxsize=32)
def source_map(text: str, language: str) -> SourceMap:
    """The chapter's source map (module docstring); cached per text and language."""
    spans = find_quote_spans(text, language)
    paragraphs = _paragraph_spans(text, spans)
    cjk = len(_CJK.findall(text)) * 2 > len(text.strip() or " ")
    starts: list[tuple[int, int]] = []
    for index, p in enumerate(paragraphs):
        starts += [(s, index) for s in _unit_starts(text, p, spans, cjk)]
    units = tuple(
        Unit(n, 0 if n == 1 else s, starts[n][0] if n < len(starts) else len(text), index)
        for n, (s, index) in enumerate(starts, 1)
    )
    unit_starts = [u.start for u in units]
    para_of = [paragraphs[u.paragraph] for u in units]
    quote_units = [bisect.bisect_right(unit_starts, a) for a, _ in spans]
    bounds = [(para_of[u - 1].start, para_of[u - 1].end) for u in quote_units]
    said = [attribution(text, s, b, language) for s, b in zip(spans, bounds, strict=True)]
    outside = narration(text, spans)
    names = tuple(find_names(outside, said, language, "\n".join(text[a:b] for a, b in spans)))
    kinds = [
        quote_kind(text, s, b, language, a is not None) for s, b, a in zip(spans, bounds, said, strict=True)
    ]
    spoken = [k for k, kind in enumerate(kinds) if kind == "speech"]
    index = [units[u - 1].paragraph for u in quote_units]  # each quote's paragraph
    narrated = _narrated(text, paragraphs, spans)
    places = [
        QuotePlace(spans[k], bounds[k], index[k], paragraphs[max(0, index[k] - 1)].start, narrated[index[k]])
        for k in spoken
    ]
    found = speakers_of(text, places, [said[k] for k in spoken], [c.name for c in names], language)
    speakers = dict(zip(spoken, found, strict=True))
    nobody = Speaker(None, None, False)
    quotes = tuple(
        Quote(n, a, b, u, text[a:b], who.name, said[n - 1] is not None, who.evidence, who.sure, kinds[n - 1])
        for n, ((a, b), u) in enumerate(zip(spans, quote_units, strict=True), 1)
        for who in (speakers.get(n - 1, nobody),)
    )
    lines: list[SourceLine] = []
    for q in (q for q in quotes if q.kind == "speech"):  # a sign or a scare quote is no one's line
        parts = [p.strip() for p in balloon_parts(flat(q.text), BALLOON_CHARS)]
        parts = [p for p in parts if p]
        for k, part in enumerate(parts, 1):
            lines.append(SourceLine(len(lines) + 1, q.number, k, len(parts), part, q.unit))
    return SourceMap(
        text, language, tuple(paragraphs), units, quotes, tuple(lines), names, heading(text, MAX_TITLE)
    )


def flat(text: str) -> str:
    """``text`` on one line, as a balloon letters it: a line break and the spaces around it become one
    space, or nothing between two Chinese or Japanese characters; ends trimmed."""

    def join(m: re.Match[str]) -> str:
        a, b = m.string[m.start() - 1 : m.start()], m.string[m.end() : m.end() + 1]
        return "" if _CJK.match(a) and _CJK.match(b) else " "

    return re.sub(r"[ \t\u3000]*(?:\r\n|\r|\n)[ \t\u3000]*", join, text.strip())


def spoken_quotes(text: str, language: str) -> list[str]:
    """The text of each quoted line that is speech (signs, headlines, titles and scare quotes left
    out: ``kinds.py``), verbatim, in text order: the lines a screenplay keeps."""
    return [q.text for q in source_map(text, language).quotes if q.kind == "speech"]


def is_separator(text: str) -> bool:
    """A scene separator line (``***``, ``＊＊＊``, ``◇◇◇``): marks only, no story text (no letter or
    digit)."""
    return bool(_SEPARATOR.fullmatch(text.strip())) and not any(
        unicodedata.category(ch)[0] in "LN" for ch in text
    )
