"""What every source map keeps, checked: the invariants the source-map tests assert on every
chapter they make (shared by the property tests and the hand-written examples)."""

from __future__ import annotations

import bisect
import re
from itertools import pairwise

from mangaka.source import (
    BALLOON_CHARS,
    QUOTE_MARKS,
    SourceLine,
    SourceMap,
    find_quote_spans,
    flat,
    source_map,
)

LANGUAGES = ("en", "zh", "ja")
ALL_MARKS = {lang: [m for group in QUOTE_MARKS[lang] for m in group] for lang in LANGUAGES}
MARK_CHARS = {lang: {c for m in ALL_MARKS[lang] for c in (m.opener, m.closer)} for lang in LANGUAGES}
# A sentence end, as the spec means it: end punctuation, closing marks, the spaces after.
SENTENCE_END = re.compile(r"[.!?。！？…]+[\"'”’」』）)]*\s*")
ENDS_A_SENTENCE = re.compile(r"[.!?。！？…]+[\"'”’」』）)]*$")


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def lines_of(text: str) -> str:
    """``text`` with every line break as ``\\n``."""
    return re.sub(r"\r\n|\r", "\n", text)


# ------------------------------------------------------------------ what every source map keeps


def check_units(sm: SourceMap) -> None:
    text, units = sm.text, sm.units
    if not text.strip():
        assert units == ()
        return
    assert units[0].start == 0
    assert units[-1].end == len(text)
    assert [u.number for u in units] == list(range(1, len(units) + 1))
    for u, v in pairwise(units):
        assert u.end == v.start
        assert u.paragraph <= v.paragraph
    assert all(u.start < u.end for u in units)  # so every character lies in exactly one unit
    # units_of_paragraphs and unit_at agree with the units
    assert sorted({u.paragraph for u in units}) == list(range(len(sm.paragraphs)))
    for index in range(len(sm.paragraphs)):
        mine = [u.number for u in units if u.paragraph == index]
        assert sm.units_of_paragraphs(index, index) == (mine[0], mine[-1])
        p = sm.paragraphs[index]
        assert sm.unit_at(p.start) == mine[0]
        assert text[p.start : p.end].strip()
    assert sm.units_of_paragraphs(0, len(sm.paragraphs) - 1) == (1, len(units))
    for u in units:
        for position in {u.start, (u.start + u.end) // 2, u.end - 1}:
            assert sm.unit_at(position) == u.number


def check_quotes(sm: SourceMap) -> None:
    text = sm.text
    starts = [u.start for u in sm.units]
    assert [q.number for q in sm.quotes] == list(range(1, len(sm.quotes) + 1))
    assert [(q.start, q.end) for q in sm.quotes] == find_quote_spans(text, sm.language)
    for q in sm.quotes:
        assert q.text == text[q.start : q.end]
        assert q.text.strip()
        assert text[q.start - 1] in MARK_CHARS[sm.language]  # the opening mark, just before
        assert text[q.end] in MARK_CHARS[sm.language]  # the closing mark, just after
        unit = sm.units[q.unit - 1]
        assert unit.start <= q.start and q.end <= unit.end
        assert q.unit == bisect.bisect_right(starts, q.start)  # unit_at, without its list per call
        # No unit starts between a quote's opening mark and its closing mark (both kept with it).
        k = bisect.bisect_right(starts, q.start - 1)
        assert k == len(starts) or starts[k] > q.end, f"unit {k + 1} starts inside quote {q.number}"
    for q, r in pairwise(sm.quotes):
        assert q.end < r.start  # in text order, not overlapping (a mark between)


def check_lines(sm: SourceMap) -> None:
    lines = sm.lines
    assert [line.number for line in lines] == list(range(1, len(lines) + 1))
    assert all(0 < len(line.text) <= BALLOON_CHARS and line.text == line.text.strip() for line in lines)
    assert [line.quote for line in lines] == sorted(line.quote for line in lines)
    by_quote: dict[int, list[SourceLine]] = {}
    for line in lines:
        by_quote.setdefault(line.quote, []).append(line)
    spoken = [q for q in sm.quotes if q.kind == "speech"]
    assert sorted(by_quote) == [q.number for q in spoken]  # every spoken quote has a line, no sign one
    for q in spoken:
        parts = by_quote[q.number]
        assert [p.part for p in parts] == list(range(1, len(parts) + 1))
        assert {p.parts for p in parts} == {len(parts)}
        assert {p.unit for p in parts} == {q.unit}
        # Nothing dropped: the parts are the quote, up to whitespace.
        assert squeeze("".join(p.text for p in parts)) == squeeze(q.text)
        check_sentence_cuts(flat(q.text), [p.text for p in parts])


def check_sentence_cuts(said: str, parts: list[str]) -> None:
    """Each part but the last ends at a sentence end when the quote, from where the part starts,
    has a sentence end that fits in a balloon (with text after it)."""
    pos = prev_end = 0
    for k, part in enumerate(parts):
        i = said.index(part, pos)
        if k < len(parts) - 1:
            # The part's balloon starts at or before i (after the cut before it, prev_end at least).
            window = said[i : prev_end + BALLOON_CHARS + 1]
            fits = [m for m in SENTENCE_END.finditer(window) if 0 < m.end() < len(window)]
            if fits:
                assert ENDS_A_SENTENCE.search(part), f"part {k + 1} {part!r} not cut at a sentence end"
        pos = prev_end = i + len(part)


def check_names(sm: SourceMap) -> None:
    """Each name and hint is in the text (``an old man`` is named ``the old man``)."""
    flat = re.sub(r"\s+", " ", sm.text).lower()
    names = [c.name for c in sm.names]
    assert len(set(names)) == len(names)
    for name in {*names, *(q.hint for q in sm.quotes if q.hint)}:
        said = name.lower()
        forms = [said] + ([f"a {said[4:]}", f"an {said[4:]}"] if said.startswith("the ") else [])
        assert any(form in flat for form in forms), f"{name!r} is not in the text"
    assert all(q.hint is not None for q in sm.quotes if q.attributed)


def check_map(text: str, lang: str) -> SourceMap:
    sm = source_map(text, lang)
    assert sm.text == text and sm.language == lang
    check_units(sm)
    check_quotes(sm)
    check_lines(sm)
    check_names(sm)
    return sm
