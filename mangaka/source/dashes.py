"""Dash dialogue (French, Spanish, Russian, German): the spoken parts of a chapter's lines that
open with a dash, and of its quote marks' spans, without the incises that say who speaks.

A **dash line** opens with an em dash ``—``, a horizontal bar ``―`` or an en dash ``–`` (after
spaces or not) followed by words: it is spoken, from its first word to its line's end. In a chapter
with blank lines between its paragraphs (lines wrapped inside them), a line that does not end a
sentence (``.!?…`` or a closing mark) goes on into the next one, unless that one is blank or opens
with a dash; in a chapter without blank lines each line is a paragraph, and a dash line ends with
its line.

Inside a spoken region (a dash line, or a quote marks' span, ``quotes.py``) an **incise** is
narration, cut out of the speech:

- a dash after a space opens one (``— Кто там? — спросил он.``, ``—¿Quién es? —preguntó Ana``;
  inside quote marks only when a speech verb and its subject follow: ``“Espera —dijo ella—, no…”``),
  the next dash closes it, and the speech resumes after that dash (and a ``.``/``,`` right after it:
  ``—preguntó Ana—. Soy yo.``); no closing dash: the rest of the region is narration;
- a speech verb and its subject, inverted, after ``?!,.…`` open one without a dash (``— Tu viens ?
  demanda-t-il.``, ``— Non, répondit Marie.``, ``european.inversion``); a comma right after it
  resumes the speech (``— Je ne sais pas, dit-elle, si nous…``) unless narration words follow it
  (``dit-il, en souriant``); else the narration runs to the next dash after a space, where the
  speech resumes (``demanda-t-il. — Non.``), or to the region's end.

Each spoken part is a span, trimmed of the spaces around it (no-break spaces included; French sets
``« … »`` with them), so a span starts at its first spoken character. A quote marks' span holding
lines that open with a dash (``« Tu viens ? demanda-t-il.`` / ``— Non. »``: the French way of
setting a whole exchange in one pair of guillemets) is read as the region up to the first such line
and those lines. A quote marks' span inside a dash line is part of its speech (its dashes open no
incise); one that starts in a dash line and ends past it is a stray mark. Spans come in text order,
none overlapping.

Each kind of search (a dash after a space, any dash, an inverted verb) reads the text once, left to
right, however many regions there are: linear in the text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from functools import cache

from .european import inversion, narration_goes_on

_LINE_DASH = re.compile(r"(?:\A|(?<=[\r\n]))[ \t\u00a0\u202f\u3000]*[—―–][ \t\u00a0\u202f]*(?=[^\s—―–])")
# A blank line: two line breaks or more, with spaces between (``\r\n`` is one line break). The one
# definition: a paragraph break of the source map and the end of a paragraph in the reading.
BLANK_LINE = re.compile(r"(?:\r\n|\r(?!\n)|\n)(?:[ \t\f\v\u3000]*(?:\r\n|\r(?!\n)|\n))+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_OPENER = re.compile(r"(?<=\s)[—―–]")  # an incise's opening dash: after a space
_ANY_DASH = re.compile(r"[—―–]")
_RESUME = re.compile(r"\s*[.,;:]?\s*")  # what follows an incise's closing dash before the speech
_LEAD = re.compile(r"\s*")
_ENDS = '.!?…»"”“’)'  # a line ending with one of these ends its speech


@cache
def _searches(language: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """An inverted attribution after ``?!,.…`` (its spaces matched), the attribution itself, and a
    comma after an incise that resumes the speech."""
    inverted = inversion(language)
    undashed = re.compile(rf"(?<=[?!,.…])\s+(?={inverted})")
    resume = re.compile(rf"\s*,\s*(?!(?:{narration_goes_on(language)})(?![\w'’]))(?=\S)")
    return undashed, re.compile(inverted), resume


class _Finder:
    """The matches of one pattern over the whole text, read once, left to right: the first match
    at or after a position, positions asked for never going back."""

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self._found = pattern.finditer(text)
        self._current = next(self._found, None)

    def at_or_after(self, pos: int) -> re.Match[str] | None:
        while self._current is not None and self._current.start() < pos:
            self._current = next(self._found, None)
        return self._current


class _Regions:
    """Cuts spoken regions into spans (module docstring), the quote marks' spans nested in a region
    skipped."""

    def __init__(self, text: str, language: str, marks: Sequence[tuple[int, int]]) -> None:
        self.text = text
        self.marks = marks
        self.openers = [a - 1 for a, _ in marks]
        undashed, self.inverted, self.resume = _searches(language)
        self.opener = _Finder(_OPENER, text)
        self.dash = _Finder(_ANY_DASH, text)
        self.undashed = _Finder(undashed, text)

    def _free(
        self, finder: _Finder, pos: int, region: tuple[int, int], stop: int | None = None
    ) -> re.Match[str] | None:
        """The first match from ``pos`` on, before ``stop`` (else the region's end), outside the
        quote marks' spans nested in the region."""
        stop = region[1] if stop is None else stop
        while (m := finder.at_or_after(pos)) is not None and m.start() < stop:
            k = bisect.bisect_right(self.openers, m.start()) - 1
            nested = k >= 0 and self.openers[k] >= region[0] and self.marks[k][1] < region[1]
            if not nested or self.marks[k][1] < m.start():
                return m
            pos = self.marks[k][1] + 1  # inside a nested quote: look on after its closing mark
        return None

    def spans(self, start: int, end: int, dashed: bool) -> list[tuple[int, int]]:
        """The spoken spans of ``text[start:end]``, which opens with speech; ``dashed``: a dash
        line (any dash after a space opens an incise), else a quote marks' span."""
        out: list[tuple[int, int]] = []
        pos = start
        while pos < end:
            speech_end, resume = self._incise(pos, (start, end), dashed)
            a, b = pos, speech_end
            while a < b and self.text[a].isspace():
                a += 1
            while b > a and self.text[b - 1].isspace():
                b -= 1
            if a < b:
                out.append((a, b))
            if resume is None or resume <= pos:
                break
            pos = resume
        return out

    def _incise(self, pos: int, region: tuple[int, int], dashed: bool) -> tuple[int, int | None]:
        """Where the speech from ``pos`` ends (the next incise, else the region's end) and where it
        resumes after that incise (``None``: not in this region)."""
        end = region[1]
        undashed = self._free(self.undashed, pos, region)
        limit = end if undashed is None else undashed.start()
        opener = self._free(self.opener, pos, region, limit)
        while opener is not None and not dashed:  # inside quote marks: a dash before an attribution
            lead = _LEAD.match(self.text, opener.end(), end)
            if self.inverted.match(self.text, lead.end() if lead else opener.end(), end):
                break
            opener = self._free(self.opener, opener.end(), region, limit)
        if opener is not None:
            close = self._free(self.dash, opener.end(), region)
            if close is None:
                return opener.start(), None
            after = _RESUME.match(self.text, close.end(), end)
            return opener.start(), after.end() if after else close.end()
        if undashed is None:
            return end, None
        said = self.inverted.match(self.text, undashed.end(), end)
        after = said.end() if said else undashed.end()
        comma = self.resume.match(self.text, after, end)
        if comma:
            return undashed.start(), comma.end()
        again = self._free(self.opener, after, region)
        return undashed.start(), None if again is None else again.end()


def _line_end(text: str, start: int, wrapped: bool, dash_lines: set[int]) -> int:
    """Where the dash line whose words start at ``start`` ends (module docstring)."""
    line = _LINE_BREAK.search(text, start)
    end = line.start() if line else len(text)
    line_start = start
    while wrapped and line is not None:
        said = text[line_start:end].rstrip()
        if not said or said[-1] in _ENDS or line.end() in dash_lines:
            break
        following = _LINE_BREAK.search(text, line.end())
        following_end = following.start() if following else len(text)
        if not text[line.end() : following_end].strip():
            break
        line_start, end, line = line.end(), following_end, following
    return end


def dialogue_spans(text: str, marks: Sequence[tuple[int, int]], language: str) -> list[tuple[int, int]]:
    """The spoken spans of ``text`` (module docstring), from its dash lines and the spans of its
    quote marks (``marks``: each span's inside, in text order), in text order."""
    lines = [(m.start(), m.end()) for m in _LINE_DASH.finditer(text)]
    if not lines and not marks:
        return []
    dash_lines = {s for s, _ in lines}
    wrapped = BLANK_LINE.search(text) is not None
    regions = _Regions(text, language, marks)
    out: list[tuple[int, int]] = []
    i = j = pos = 0
    while True:
        while i < len(marks) and marks[i][0] - 1 < pos:
            i += 1
        while j < len(lines) and lines[j][0] < pos:
            j += 1
        if i == len(marks) and j == len(lines):
            break
        if j == len(lines) or (i < len(marks) and marks[i][0] - 1 < lines[j][0]):
            a, b = marks[i]
            starts, ends, dashed = [a], [], [False]
            for s, c in lines[j:]:
                if s >= b:
                    break
                ends.append(s)
                starts.append(min(c, b))
                dashed.append(True)
            ends.append(b)
            for s, e, d in zip(starts, ends, dashed, strict=True):
                out += regions.spans(s, e, d)
            pos = b + 1
        else:
            s, c = lines[j]
            end = _line_end(text, c, wrapped, dash_lines)
            out += regions.spans(c, end, True)
            pos = max(end, c + 1)
    return out
