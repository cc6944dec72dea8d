"""Quoted spans of a chapter, found by its language's quote marks, in linear time.

English: ``"…"`` (straight double quotes, as in pasted prose) and ``“…”``; Chinese: ``“…”`` and
``「…」``; Japanese: ``「…」`` and ``『…』``.

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
"""

from __future__ import annotations

import re
from functools import cache

from ..errors import InputError

# Longest quoted span taken as a quote; a longer one is an unbalanced mark, not speech.
MAX_QUOTE_CHARS = 1000

QUOTE_MARKS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (('"', '"'), ("\u201c", "\u201d")),
    "zh": (("\u201c", "\u201d"), ("\u300c", "\u300d")),
    "ja": (("\u300c", "\u300d"), ("\u300e", "\u300f")),
}

_BREAK = r"\n[ \t\r\f\v\u3000]*\n"


@cache
def _patterns(language: str) -> tuple[re.Pattern[str], dict[str, tuple[str, re.Pattern[str]]]]:
    if language not in QUOTE_MARKS:
        raise InputError(
            f"language {language!r} has no quote marks known here; choose one of: {', '.join(QUOTE_MARKS)}"
        )
    marks = QUOTE_MARKS[language]
    openers = re.compile("[" + "".join(re.escape(o) for o, _ in marks) + "]")
    stops = {}
    for opener, closer in marks:
        chars = re.escape(opener) if opener == closer else re.escape(opener) + re.escape(closer)
        stops[opener] = (closer, re.compile(f"[{chars}]|{_BREAK}"))
    return openers, stops


def find_quote_spans(text: str, language: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each quoted span's inside (marks excluded), in text order."""
    openers, stops = _patterns(language)
    spans: list[tuple[int, int]] = []
    pos = 0
    while (m := openers.search(text, pos)) is not None:
        start = m.end()
        closer, stop = stops[m.group()]
        end = stop.search(text, start, start + MAX_QUOTE_CHARS + 1)
        if end is None or end.group() != closer:
            pos = start  # a stray mark: look on right after it
            continue
        if text[start : end.start()].strip():
            spans.append((start, end.start()))
        pos = end.end()
    return spans


def find_quotes(text: str, language: str) -> list[str]:
    """The text between the quote marks of each quoted span of ``text``, verbatim, in text order.

    ``language`` is ``en``, ``zh`` or ``ja`` (the marks are listed in this module's docstring);
    unbalanced marks are skipped (see there), never an error.
    """
    return [text[a:b] for a, b in find_quote_spans(text, language)]
