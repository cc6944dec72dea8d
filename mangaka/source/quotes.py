"""Quoted lines of a chapter, found by quote marks in linear time, and cut to fit a balloon.

Marks, by language (the first group is always used; the second only when the first finds no
quoted line in the chapter, so a chapter written with other marks still has its quotes):

- English: ``"…"`` (straight double quotes, as in pasted prose) and ``“…”``; else ``‘…’`` or
  ``'…'`` (single quotes, whose closing mark followed by a letter is an apostrophe, not a close);
- Chinese: ``“…”`` and ``「…」``; else ``『…』``, ``‘…’`` (set right against the characters around
  it: no apostrophe rule) and ``《…》`` is never a quote (a title);
- Japanese: ``「…」`` and ``『…』``; else ``“…”``;
- Korean: ``"…"`` and ``“…”``; else ``‘…’`` and ``'…'`` (set against Hangul, ``‘이상하다’고``: only a
  Latin letter makes a straight one an apostrophe), ``『…』``, ``「…」``;
- French and Spanish: ``«…»`` (French with spaces inside), ``“…”``, ``"…"``; else ``‹…›``, ``‘…’``;
- Russian: ``«…»``, ``„…“``; else ``“…”``, ``"…"`` (as typed online);
- German: ``„…“``, ``»…«``, ``"…"``; else ``‚…‘``, ``›…‹``.

French, Spanish, Russian and German also write dialogue with dashes: their spans come from
``dashes.py``, which reads the lines that open with a dash and cuts the incises (``dit-il``,
``—preguntó Ana—``) out of them and out of the marks' spans; these spans are trimmed of the spaces
around them. The fallback marks are used when neither the first group nor a dash finds a quote.

A span opens at an opening mark and closes at the first matching closing mark, unless one of
these comes first, in which case the opening mark is left as a stray character and the search
goes on right after it:

- the same opening mark again (for straight quotes, which open and close alike, this is the close);
- a paragraph break (a blank line): a quote never runs from one paragraph into the next;
- more than ``MAX_QUOTE_CHARS`` characters.

So an unbalanced mark costs at most its own paragraph's quotes, never the rest of the text.
Each search stops at the next mark of its own kind, a paragraph break or the length limit, so
every character is read a bounded number of times per kind of mark. Empty spans (``""``) and
spans of whitespace only are dropped.

``balloon_parts`` cuts a quote longer than a balloon into consecutive parts at sentence ends,
never dropping a character (a sentence longer than a balloon is cut at a clause mark, else at a
space, else at the balloon's length).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from ..errors import InputError
from .dashes import dialogue_spans
from .european import EUROPEAN

# Longest quoted span taken as a quote; a longer one is an unbalanced mark, not speech.
MAX_QUOTE_CHARS = 1000


@dataclass(frozen=True)
class Marks:
    """One kind of quote mark: its opening mark and the pattern of its closing mark."""

    opener: str
    closer: str
    opener_guard: str = ""  # a lookbehind the opener must pass (single quotes: not after a letter)
    closer_guard: str = ""  # a lookahead the closer must pass (single quotes: not before a letter)


_SINGLE_STRAIGHT = Marks("'", "'", r"(?<![\w])", r"(?![\w])")
_SINGLE_CURLY = Marks("\u2018", "\u2019", r"(?<![\w])", r"(?![\w])")
# Chinese sets single quotes right against the characters around them (``说：‘走吧，’他``), and a
# Chinese character is a word character to ``\w``: no guard there, Chinese has no apostrophe.
_SINGLE_CURLY_ZH = Marks("\u2018", "\u2019")
# Korean sets them against Hangul too (``‘이상하다’고``); a straight one next to a Latin letter is an
# apostrophe (an English word in the text).
_SINGLE_STRAIGHT_KO = Marks("'", "'", r"(?<![A-Za-z])", r"(?![A-Za-z])")
_STRAIGHT = Marks('"', '"')
_GUILLEMETS = Marks("\u00ab", "\u00bb")
_CURLY = Marks("\u201c", "\u201d")
_LOW = Marks("\u201e", "\u201c")  # „…“
_SINGLE_ANGLE = Marks("\u2039", "\u203a")  # ‹…›

QUOTE_MARKS: dict[str, tuple[tuple[Marks, ...], tuple[Marks, ...]]] = {
    "en": ((Marks('"', '"'), Marks("\u201c", "\u201d")), (_SINGLE_CURLY, _SINGLE_STRAIGHT)),
    "zh": (
        (Marks("\u201c", "\u201d"), Marks("\u300c", "\u300d")),
        (Marks("\u300e", "\u300f"), _SINGLE_CURLY_ZH),
    ),
    "ja": ((Marks("\u300c", "\u300d"), Marks("\u300e", "\u300f")), (Marks("\u201c", "\u201d"),)),
    "ko": (
        (_STRAIGHT, _CURLY),
        (_SINGLE_CURLY_ZH, _SINGLE_STRAIGHT_KO, Marks("\u300e", "\u300f"), Marks("\u300c", "\u300d")),
    ),
    "fr": ((_GUILLEMETS, _CURLY, _STRAIGHT), (_SINGLE_ANGLE, _SINGLE_CURLY)),
    "es": ((_GUILLEMETS, _CURLY, _STRAIGHT), (_SINGLE_ANGLE, _SINGLE_CURLY)),
    "ru": ((_GUILLEMETS, _LOW), (_CURLY, _STRAIGHT)),
    "de": (
        (_LOW, Marks("\u00bb", "\u00ab"), _STRAIGHT),
        (Marks("\u201a", "\u2018", r"(?<![\w])", r"(?![\w])"), Marks("\u203a", "\u2039")),
    ),
}

# A line break (``\r\n`` is one: ``\r`` alone only when no ``\n`` follows), and a paragraph break.
_NEWLINE = r"(?:\r\n|\r(?!\n)|\n)"
_BREAK = rf"{_NEWLINE}[ \t\f\v\u3000]*{_NEWLINE}"


@cache
def _patterns(marks: tuple[Marks, ...]) -> tuple[re.Pattern[str], dict[str, tuple[re.Pattern[str], str]]]:
    openers = re.compile("|".join(m.opener_guard + re.escape(m.opener) for m in marks))
    stops = {}
    for m in marks:
        opener = m.opener_guard + re.escape(m.opener)
        closer = re.escape(m.closer) + m.closer_guard
        alternatives = [closer] if m.opener == m.closer else [opener, closer]
        stops[m.opener] = (re.compile("|".join(f"({a})" for a in alternatives) + f"|{_BREAK}"), m.closer)
    return openers, stops


class _Stops:
    """Where one kind of mark's searches stop (its opening mark, its closing mark, a paragraph
    break), found once over the whole text, left to right: the searches of that kind start further
    and further on, so the text is read once per kind, however many stray marks it has."""

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self._found = pattern.finditer(text)
        self._current = next(self._found, None)

    def first_from(self, pos: int) -> re.Match[str] | None:
        """The first stop starting at ``pos`` or later (``pos`` never goes back). No stop runs over
        ``pos``: a search starts right after a mark, and a mark is a stop of one character."""
        while self._current is not None and self._current.start() < pos:
            self._current = next(self._found, None)
        return self._current


def _spans(text: str, marks: tuple[Marks, ...]) -> list[tuple[int, int]]:
    openers, stops = _patterns(marks)
    scans = {opener: _Stops(stop, text) for opener, (stop, _) in stops.items()}
    spans: list[tuple[int, int]] = []
    pos = 0
    while (m := openers.search(text, pos)) is not None:
        start = m.end()
        closer = stops[m.group()][1]
        end = scans[m.group()].first_from(start)
        # The closing mark is the pattern's last group (the first, for straight marks).
        if (
            end is None
            or end.end() > start + MAX_QUOTE_CHARS + 1
            or end.group() != closer
            or end.lastindex is None
        ):
            pos = start  # a stray mark: look on right after it
            continue
        if text[start : end.start()].strip():
            spans.append((start, end.start()))
        pos = end.end()
    return spans


def marks_of(language: str) -> tuple[tuple[Marks, ...], tuple[Marks, ...]]:
    if language not in QUOTE_MARKS:
        raise InputError(
            f"language {language!r} has no quote marks known here; choose one of: {', '.join(QUOTE_MARKS)}"
        )
    return QUOTE_MARKS[language]


def find_quote_spans(text: str, language: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each quoted span's inside (marks excluded), in text order; in French,
    Spanish, Russian and German each spoken part, trimmed (``dashes.py``)."""
    primary, fallback = marks_of(language)
    spans = _spans(text, primary)
    if language in EUROPEAN:
        return dialogue_spans(text, spans, language) or dialogue_spans(text, _spans(text, fallback), language)
    return spans or _spans(text, fallback)


def find_quotes(text: str, language: str) -> list[str]:
    """The text between the quote marks of each quoted span of ``text``, verbatim, in text order
    (in French, Spanish, Russian and German each spoken part, trimmed: ``dashes.py``).

    ``language`` is one of ``QUOTE_MARKS`` (the marks are listed in this module's docstring);
    unbalanced marks are skipped (see there), never an error.
    """
    return [text[a:b] for a, b in find_quote_spans(text, language)]


def narration(text: str, spans: list[tuple[int, int]]) -> str:
    """The text outside quotes, each quote's inside as ``…``."""
    pieces, pos = [], 0
    for a, b in spans:
        pieces += [text[pos:a], "…"]
        pos = b
    pieces.append(text[pos:])
    return "".join(pieces)


# ---- a quote in balloons ----

_SENTENCE_CUT = re.compile(r"[.!?。！？…]+[\"'”’」』）)]*\s*")
_CLAUSE_CUT = re.compile(r"[,;:，、；：—]+\s*")
_SPACE_CUT = re.compile(r"\s+")


def _cut_points(text: str, pattern: re.Pattern[str]) -> list[int]:
    return [m.end() for m in pattern.finditer(text) if 0 < m.end() < len(text)]


def balloon_parts(text: str, limit: int) -> list[str]:
    """``text`` as consecutive parts of at most ``limit`` characters whose concatenation is
    ``text``: cut at the last sentence end that fits, else a clause mark, else a space, else at
    ``limit`` (a part is never empty). Linear in ``len(text)``."""
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = 0
        for pattern in (_SENTENCE_CUT, _CLAUSE_CUT, _SPACE_CUT):
            fitting = [p for p in _cut_points(rest[: limit + 1], pattern) if p <= limit]
            if fitting:
                cut = fitting[-1]
                break
        cut = cut or limit
        parts.append(rest[:cut])
        rest = rest[cut:]
    parts.append(rest)
    return parts
