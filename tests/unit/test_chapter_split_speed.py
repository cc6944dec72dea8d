"""Splitting a book is linear in its length and gives what the earlier, slower split gave.

The earlier implementation is kept here as the reference (``reference_split_chapters``: its
line normalisation, heading scan, recursive pieces and repeated packing, copied as they were);
hypothesis checks that ``split_chapters`` gives the same chapters on generated books. Linear time
is shown by CPU time at n/8 and n (``tests/growth.py``), never by a wall-clock limit.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mangaka.chapters import (
    CHAPTER,
    FRONT_MATTER_CHARS,
    FRONT_MATTER_LINES,
    FRONT_MATTER_TITLE,
    MAX_HEADING_CHARS,
    VOLUME,
    Chapter,
    _continues_prose,
    _drop_tables_of_contents,
    _line_count,
    _Mark,
    _merge_short,
    _next_text_line,
    _plain_heading,
    parse_range,
    split_chapters,
)
from mangaka.errors import InputError
from tests.growth import assert_linear

BOUNDED = settings(
    deadline=None,  # time is asserted below, as a ratio of CPU times
    database=None,  # nothing written into the checkout
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)

# ------------------------------------------------------------------ the reference: the earlier split

_MARKDOWN = re.compile(r"(?P<hashes>#{1,6})[ \t]+(?P<title>.*?)(?:[ \t]+#+)?")
_FENCE = re.compile(r"(```|~~~)")
_LINE_BREAKS = re.compile(r"\r\n|[\r\u2028\u2029\x85]")
_SPLITTERS = (
    re.compile(r"\n\n+"),
    re.compile(r"\n"),
    re.compile(r"(?:[。！？…]+|[.!?]+(?=[\s”’\"')\]」』]|$))[”’」』\"'）)\]]*[ \t]*"),
)


def _reference_markdown_lines(lines: list[str]) -> list[tuple[int, int, str]]:
    found, fenced = [], False
    for i, line in enumerate(lines):
        s = line.strip()
        if _FENCE.match(s):
            fenced = not fenced
            continue
        m = None if fenced else _MARKDOWN.fullmatch(s)
        if m and m.group("title").strip():
            found.append((i, len(m.group("hashes")), m.group("title").strip()))
    return found


def _reference_markdown_marks(lines: list[str]) -> list[_Mark] | None:
    found = _reference_markdown_lines(lines)
    counts = Counter(level for _, level, _ in found)
    repeated = sorted(level for level, n in counts.items() if n > 1)
    if not repeated:
        return None
    level_at = {i: level for i, level, _ in found}
    chosen = repeated[-1]
    for level in repeated:
        containers = all(
            (j := _next_text_line(lines, i)) is not None and level_at.get(j, 0) > level
            for i, lv, _ in found
            if lv == level
        )
        if not (containers and any(other > level for other in repeated)):
            chosen = level
            break
    return [
        _Mark(i, title, CHAPTER if level == chosen else VOLUME)
        for i, level, title in found
        if level == chosen or (level < chosen and level in repeated)
    ]


def _reference_plain_marks(lines: list[str]) -> list[_Mark]:
    marks = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or len(s) > MAX_HEADING_CHARS:
            continue
        md = _MARKDOWN.fullmatch(s)
        text = md.group("title").strip() if md else s
        rank = _plain_heading(text) if text else None
        if rank is not None and not _continues_prose(lines, i):
            marks.append(_Mark(i, text, rank))
    return marks


def _reference_normalise_lines(text: str) -> list[str]:
    text = text.removeprefix("\ufeff")
    return [line.rstrip() for line in _LINE_BREAKS.sub("\n", text).split("\n")]


def _reference_body(lines: list[str]) -> str:
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def _reference_hard_split(text: str, max_chars: int) -> list[str]:
    pieces = []
    while len(text.rstrip()) > max_chars:
        window = text[:max_chars]
        space = max(window.rfind(" "), window.rfind("\t"), window.rfind("\u3000"))
        cut = space + 1 if space >= max_chars // 2 else max_chars
        pieces.append(text[:cut])
        text = text[cut:]
    return [*pieces, text] if text else pieces


def _reference_pieces(text: str, max_chars: int, level: int = 0) -> list[str]:
    if len(text.rstrip()) <= max_chars:
        return [text]
    if level == len(_SPLITTERS):
        return _reference_hard_split(text, max_chars)
    cuts = [m.end() for m in _SPLITTERS[level].finditer(text) if 0 < m.end() < len(text)]
    out: list[str] = []
    for a, b in pairwise([0, *cuts, len(text)]):
        out += _reference_pieces(text[a:b], max_chars, level + 1)
    return out


def _reference_pack(pieces: list[str], limit: int) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        kept = len(piece.rstrip())
        if current and kept and size + kept > limit:
            chunks.append("".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece)
    return [*chunks, "".join(current)] if current else chunks


def _reference_chunk(text: str, max_chars: int) -> list[str]:
    pieces = _reference_pieces(text, max_chars)
    count = len(_reference_pack(pieces, max_chars))
    low, high = 1, max_chars
    while low < high:
        mid = (low + high) // 2
        if len(_reference_pack(pieces, mid)) <= count:
            high = mid
        else:
            low = mid + 1
    parts = [part.strip("\n").rstrip() for part in _reference_pack(pieces, low)]
    return [part for part in parts if part.strip()]


def _reference_headed_chapters(lines: list[str], marks: list[_Mark]) -> list[tuple[str, str, bool]]:
    chapters: list[tuple[str, str, bool]] = []
    front = _reference_body(lines[: marks[0].line])
    if front.strip() and (len(front) > FRONT_MATTER_CHARS or _line_count(front) > FRONT_MATTER_LINES):
        chapters.append((FRONT_MATTER_TITLE, front, False))
    prefix: list[str] = []
    for k, mark in enumerate(marks):
        end = marks[k + 1].line if k + 1 < len(marks) else len(lines)
        text = _reference_body(lines[mark.line + 1 : end])
        if not text and k + 1 < len(marks) and mark.rank < marks[k + 1].rank:
            prefix.append(mark.title)
            continue
        chapters.append((" ".join([*prefix, mark.title]), text, True))
        prefix = []
    return chapters


def reference_split_chapters(text: str, *, max_chars: int = 20000, min_chars: int = 0) -> list[Chapter]:
    """``split_chapters`` as it was before it was made linear (its logging left out)."""
    lines = _reference_normalise_lines(text)
    if not any(lines):
        return []
    marks = _reference_markdown_marks(lines)
    if marks is None:
        marks = _reference_plain_marks(lines)
    marks = _drop_tables_of_contents(lines, marks)
    if not marks:
        parts = _reference_chunk(_reference_body(lines), max_chars)
        return [Chapter(n, f"Part {n}", part, False) for n, part in enumerate(parts, 1)]
    found = _merge_short(_reference_headed_chapters(lines, marks), min_chars)
    return [Chapter(n, title, body, heading) for n, (title, body, heading) in enumerate(found, 1)]


# ------------------------------------------------------------------ generated books

_WORDS = ["rain", "Night", "a", "bb", "雨夜", "灯", "河", "e.g", "x" * 37, "汉字" * 9]
_BLANKS = [" ", "  ", "\t", "\u3000", "\xa0", "\x0b", "\x1c", " \t\u3000 "]
_ENDS = ["。", "！", "？", "…", "。。。", ".", "!", "?", "...", "?!", "。」", ".”", "!)"]
_CLOSERS = ["”", "’", "」", "』", '"', "'", "）", ")", "]"]
_BREAKS = ["\n", "\n", "\n\n", "\n\n\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", " \n", "\n \n"]
_HEADINGS = [
    "第一章",
    "第2回 风雪",
    "第三卷",
    "序章",
    "后记",
    "后来他走了",
    "番外篇3",
    "プロローグ",
    "第1話「出会い」",
    "Chapter 1",
    "CHAPTER II: The Storm",
    "Chapter 3 was the best",
    "Part two",
    "vol. 3",
    "Prologue",
    "afterword",
    "# Title",
    "## Section ##",
    "##  Deep  ##  #",
    "#\t第四章",
    "```",
    "~~~",
    "  第五章  ",
]
_RUNS = st.builds(
    lambda ch, n: ch * n, st.sampled_from(["a", ".", "。", " ", "\u3000", "!", "\n", "#"]), st.integers(1, 90)
)
_PROSE = st.one_of(
    st.sampled_from(_WORDS + _BLANKS + _ENDS + _CLOSERS + _BREAKS),
    st.sampled_from(_WORDS + _ENDS),
    _RUNS,
    st.text(alphabet="ab .!?。\n \t\u3000”」", max_size=12),
)
_HEADED = st.one_of(_PROSE, _PROSE, st.sampled_from(_HEADINGS).map(lambda h: f"\n{h}\n"))
_MAX_CHARS = st.one_of(st.integers(1, 50), st.sampled_from([64, 100, 333, 1000, 20000]))


@settings(BOUNDED, max_examples=400)
@given(book=st.lists(_PROSE, max_size=60).map("".join), max_chars=_MAX_CHARS)
def test_books_without_headings_split_as_the_reference_splits_them(book, max_chars):
    logging.disable(logging.WARNING)  # the split's INFO line per book
    try:
        assert split_chapters(book, max_chars=max_chars) == reference_split_chapters(
            book, max_chars=max_chars
        )
    finally:
        logging.disable(logging.NOTSET)


@settings(BOUNDED, max_examples=300)
@given(
    book=st.lists(_HEADED, max_size=40).map("".join),
    max_chars=_MAX_CHARS,
    min_chars=st.sampled_from([0, 0, 5, 40]),
)
def test_any_book_splits_as_the_reference_splits_it(book, max_chars, min_chars):
    logging.disable(logging.CRITICAL)  # warnings about long or empty chapters
    try:
        got = split_chapters(book, max_chars=max_chars, min_chars=min_chars)
        assert got == reference_split_chapters(book, max_chars=max_chars, min_chars=min_chars)
    finally:
        logging.disable(logging.NOTSET)


# ------------------------------------------------------------------ linear time

# Books that once took quadratic time (one letter, a run of dots that ends no sentence, blanks
# after a Markdown heading's hashes) or a step in Python per piece (a short line or sentence), and
# some with small parts (many parts: the packing costs per part). (start, unit repeated, end,
# max_chars, characters): a quadratic shape is kept small, so that a quadratic split fails fast.
SHAPES = {
    "one letter": ("", "a", "", 20000, 400_000),
    "one letter, parts of 50": ("", "a", "", 50, 400_000),
    "dots": ("", ".", "a", 20000, 40_000),
    "Chinese sentences, no spaces": ("", "汉字。", "", 20000, 400_000),
    "short lines": ("", "abcdefghij\n", "", 20000, 400_000),
    "short lines, parts of 50": ("", "abcdefghij\n", "", 50, 400_000),
    "English sentences": ("", "The cat sat on the mat. ", "", 20000, 400_000),
    "paragraphs": ("", "a b\n\n", "", 20000, 400_000),
    "blanks": ("x", "\u3000 ", "y", 100, 400_000),
    "blanks after a Markdown heading's hashes": ("# x", " \t", "y", 20000, 40_000),
    "headings": ("", "\n第1章\n雨。\n", "", 20000, 100_000),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_split_time_is_linear_in_the_book(shape):
    start, unit, end, max_chars, chars = SHAPES[shape]
    n = chars // len(unit)
    books = {k: start + unit * k + end for k in (n // 8, n)}
    logging.disable(logging.WARNING)
    try:
        assert_linear(lambda k: split_chapters(books[k], max_chars=max_chars), n, slack=0.005)
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("unit", ["1", " ", "1 - "])
def test_parse_range_time_is_linear_in_the_range(unit):
    n = 40_000 // len(unit)
    specs = {k: f"1{unit * k}x" for k in (n // 8, n)}

    def refused(k: int) -> None:
        with pytest.raises(InputError):
            parse_range(specs[k], 10)

    assert_linear(refused, n, slack=0.005)
