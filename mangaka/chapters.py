"""Split a whole book into chapters and pick chapters by a range like ``3-7`` (a book file is read
by ``read_book``, from ``book_file.py``).

How a book is split (``split_chapters``):

* **Headings.** A heading is a whole line (at most ``MAX_HEADING_CHARS`` characters once stripped):
  Chinese ``第X章/回/节/卷/集/部/篇`` (X in Chinese, Arabic or full-width numerals), 序章, 序, 楔子,
  引子, 尾声, 后记, 番外 (optionally numbered); Japanese ``第X話/章/幕``, プロローグ, エピローグ,
  序章, 終章; English ``Chapter N`` (Arabic, Roman or number words up to ninety-nine), ``Book/Part/
  Volume N``, Prologue, Epilogue, Interlude, Afterword. A title may follow after spaces, a colon, a
  dash or an opening bracket (``第1話「出会い」``); Chinese titles may also follow directly
  (``第一章雨夜``) when the line holds no sentence punctuation. A line that reads like prose is not a
  heading: a title ending in a comma or full stop, an English title after a bare space that starts
  in lower case (``Chapter 3 was the best``), or a line continuing a wrapped prose line.
* **Markdown.** When some Markdown heading level occurs more than once, only Markdown headings
  count: the highest such level is the chapter level (a single ``# Book Title`` is text, not a
  chapter); higher levels that also repeat are volume markers; deeper levels stay in the text. A
  repeated level whose headings all directly precede a deeper heading is a volume level too.
* **Volume markers.** A heading with no text under it that directly precedes a heading of a lower
  rank (volume → chapter → section: 卷/部/集/篇/Book/Part/Volume → 章/回/話/Chapter/… → 节) is merged
  into that heading's title: ``第一卷`` + ``第一章 雨夜`` → ``第一卷 第一章 雨夜``.
* **Tables of contents.** Three or more headings in a row with no text under them that are not
  such a volume → chapter → section chain are a table of contents: they stay text (the heading
  after them that has text is the real chapter and is kept).
* **Empty chapters.** Any other heading with no text is kept as a chapter with empty text (logged
  as a warning); ``min_chars`` merges it away.
* **Front matter.** Text before the first heading longer than ``FRONT_MATTER_CHARS`` characters or
  ``FRONT_MATTER_LINES`` lines becomes chapter 1, titled ``Front matter`` with ``heading=False``.
  Shorter front matter (a book title, an author line) is dropped and logged at INFO with its text.
* **Long chapters.** A chapter found by a heading is never split, however long; one longer than
  ``max_chars`` is logged as a warning (it may not fit the model's context).
* **No headings.** The book is cut into ``Part 1``, ``Part 2``… (``heading=False``) of at most
  ``max_chars`` characters each, at paragraph boundaries (blank lines; single line breaks inside an
  over-long paragraph or in text without blank lines), then at sentence ends, and as a last resort
  at a space or anywhere. The parts are balanced (no tiny last part). No text is dropped.
* **min_chars.** A headed chapter (or front matter) shorter than ``min_chars`` characters is merged
  into the chapter after it (the last one into the one before): the merged chapter keeps the first
  title, and the second heading line goes into the text. ``0`` merges nothing.

Chapter text is whitespace-normalised: line breaks become ``\\n``, trailing spaces are stripped,
runs of blank lines become one, leading and trailing blank lines are removed; indentation is kept.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

from .errors import InputError

DEFAULT_MAX_CHARS = 20000  # a book without headings is cut into chunks of at most this many characters

log = logging.getLogger(__name__)

MAX_HEADING_CHARS = 80
FRONT_MATTER_CHARS = 200
FRONT_MATTER_LINES = 3
FRONT_MATTER_TITLE = "Front matter"
SLUG_CHARS = 60

# Heading ranks: a body-less heading merges into a following heading of a higher rank number.
VOLUME, CHAPTER, SECTION = 0, 1, 2


@dataclass(frozen=True)
class Chapter:
    number: int  # 1-based position in the book
    title: str  # the heading line as written (stripped), "Front matter", or "Part N"
    text: str  # the body without the heading line, whitespace-normalised
    heading: bool  # True when found by a heading, False for front matter and size-based parts

    def slug(self, width: int = 2) -> str:
        """A safe folder name: ``"03 第三章 雨夜"``, zero-padded to ``width`` digits, ≤ 60 characters."""
        title = "".join(
            ch for ch in self.title if ch not in '/\\:*?"<>|' and not unicodedata.category(ch).startswith("C")
        )
        name = f"{self.number:0{width}d} {' '.join(title.split())}"
        return name[:SLUG_CHARS].rstrip(" .")


# ---------------------------------------------------------------- headings

_CJK_DIGITS = "0-9０-９零〇一二两兩三四五六七八九十百千万萬"
_UNIT_RANK = {
    "章": CHAPTER,
    "回": CHAPTER,
    "話": CHAPTER,
    "话": CHAPTER,
    "幕": CHAPTER,
    "节": SECTION,
    "節": SECTION,
    "卷": VOLUME,
    "部": VOLUME,
    "集": VOLUME,
    "篇": VOLUME,
}
_CJK_NUMBERED = re.compile(rf"第\s*[{_CJK_DIGITS}]+\s*(?P<unit>[{''.join(_UNIT_RANK)}])(?P<rest>.*)")
_CJK_SPECIAL_WORDS = "序章|序言|序幕|序|楔子|引子|尾声|尾聲|后记|後記|终章|終章|プロローグ|エピローグ|幕間"
_CJK_SPECIAL = re.compile(rf"(?:{_CJK_SPECIAL_WORDS}|番外(?:篇|編|编)?(?:\s*[{_CJK_DIGITS}]+)?)(?P<rest>.*)")
# What may follow the number of a heading before its title; opening brackets stay in the title.
_SEPARATOR = re.compile(r"[\s:：\-—–―~～·・.．、「『【\[（(《〈<]")
# Characters that make "第一章…" a phrase in a sentence rather than a heading with an attached title.
_PHRASE_START = set(
    "的了是在和与與就也都还還又说說讲講写寫中里裡后後前时時课課过過开開末完结結之被把给給对對从從到个個次"
)
_SENTENCE_PUNCT = re.compile(r"[。，,；;！？!?]")
_PROSE_END = ("。", "，", ",", "；", ";", "、", "：", ":")

_ONES = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_WORD_NUMBER = rf"(?:(?:{'|'.join(_TENS)})(?:[-\s](?:{'|'.join(_ONES[:9])}))?|{'|'.join(reversed(_ONES))})"
_ROMAN = re.compile(r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})", re.IGNORECASE)
_EN_KINDS = r"chapter|chap\.|book|part|volume|vol\."
_EN_SPECIAL_WORDS = "prologue|epilogue|interlude|afterword"
_EN_NUMBERED = re.compile(
    rf"(?P<kind>{_EN_KINDS})\s+(?P<num>\d+|[ivxlcdm]+|{_WORD_NUMBER})\b(?P<rest>.*)", re.IGNORECASE
)
_EN_SPECIAL = re.compile(rf"(?:{_EN_SPECIAL_WORDS})\b(?P<rest>.*)", re.IGNORECASE)
_EN_SEPARATOR = re.compile(r"\s*[:.\-—–]\s*(?P<title>.*)|\s+(?P<bare>.*)")

_MARKDOWN_OPEN = re.compile(r"(#{1,6})[ \t]+")
# A closing run of hashes; the lookbehind starts a try only where a run of blanks starts (linear time).
_MARKDOWN_CLOSE = re.compile(r"(?<![ \t])[ \t]+#+\Z")
_FENCE = re.compile(r"(```|~~~)")


# The lines that may be headings (Markdown or plain) or code fences, a superset found in one pass:
# each is then read in full. A line starts after "\n" (found fast by `re`: a literal start).
_MAYBE_FIRST = "#`~第番" + "".join(word[0] for word in _CJK_SPECIAL_WORDS.split("|"))
_MAYBE_HEADING = re.compile(
    rf"\n[^\S\n]*(?:[{re.escape(''.join(sorted(set(_MAYBE_FIRST))))}]|(?i:{_EN_KINDS}|{_EN_SPECIAL_WORDS}))"
)


@dataclass(frozen=True)
class _Mark:
    line: int
    title: str
    rank: int


def _title_reads_as_prose(title: str) -> bool:
    title = title.strip()
    if title.endswith(_PROSE_END):
        return True
    return title.endswith(".") and len(title.split()) > 6


def _cjk_rest_ok(rest: str, line: str, attached_ok: bool) -> bool:
    if not rest.strip():
        return True
    if _SEPARATOR.match(rest):
        return not _title_reads_as_prose(rest)
    # A title written straight after the number: only without sentence punctuation and not "第一章的…".
    return attached_ok and rest[0] not in _PHRASE_START and not _SENTENCE_PUNCT.search(line)


def _en_rest_ok(rest: str) -> bool:
    if not rest.strip():
        return True
    m = _EN_SEPARATOR.fullmatch(rest)
    if not m:
        return False  # "Chapter 3, he said" or "Chapter 3rd"
    if m.group("bare") is not None:  # "Chapter 2 The Storm", not "Chapter 3 of his diary"
        bare = m.group("bare")
        return bare[:1].isupper() and not _title_reads_as_prose(bare)
    return not _title_reads_as_prose(m.group("title"))


def _plain_heading(text: str) -> int | None:
    """The rank of a heading line (stripped, Markdown hashes removed), or None."""
    m = _CJK_NUMBERED.match(text)
    if m and _cjk_rest_ok(m.group("rest"), text, attached_ok=True):
        return _UNIT_RANK[m.group("unit")]
    m = _CJK_SPECIAL.match(text)
    if m and _cjk_rest_ok(m.group("rest"), text, attached_ok=False):
        return CHAPTER
    m = _EN_NUMBERED.match(text)
    if m and _en_rest_ok(m.group("rest")):
        num = m.group("num")
        if re.fullmatch(r"[ivxlcdm]+", num, re.IGNORECASE) and not _ROMAN.fullmatch(num):
            return None  # "Chapter IIII", "Part mix"
        return CHAPTER if m.group("kind").lower().startswith("chap") else VOLUME
    m = _EN_SPECIAL.match(text)
    if m and _en_rest_ok(m.group("rest")):
        return CHAPTER
    return None


def _markdown_heading(s: str) -> tuple[int, str] | None:
    """(level, title) of a stripped Markdown heading line ``## Title ##``, or None, in time linear
    in the line (one pattern with a lazy title before the closing hashes is quadratic in blanks)."""
    m = _MARKDOWN_OPEN.match(s)
    if not m:
        return None
    rest = s[m.end() :]
    close = _MARKDOWN_CLOSE.search(rest)
    return len(m.group(1)), rest[: close.start()] if close else rest


def _maybe_headings(lines: list[str], text: str) -> list[int]:
    """Indices of the lines that may be headings or code fences (``text`` is the lines joined)."""
    found = [0] if lines and _MAYBE_HEADING.match("\n" + lines[0]) else []
    line, pos = 0, 0
    for m in _MAYBE_HEADING.finditer(text):
        line += text.count("\n", pos, m.start()) + 1  # the line after the "\n" at m.start()
        pos = m.start() + 1
        found.append(line)
    return found


def _continues_prose(lines: list[str], i: int) -> bool:
    """True when line ``i`` directly continues a hard-wrapped English prose line above it."""
    if i == 0:
        return False
    above = lines[i - 1].strip()
    return len(above) > 40 and (above[-1].islower() or above[-1] in ",;-")


def _markdown_lines(lines: list[str], maybe: list[int]) -> list[tuple[int, int, str]]:
    """(line index, level, title) of every Markdown heading outside fenced code; ``maybe`` holds
    every line that may be one or a fence (``_maybe_headings``)."""
    found, fenced = [], False
    for i in maybe:
        s = lines[i].strip()
        if _FENCE.match(s):
            fenced = not fenced
            continue
        m = None if fenced else _markdown_heading(s)
        if m and m[1].strip():
            found.append((i, m[0], m[1].strip()))
    return found


def _next_text_line(lines: list[str], i: int) -> int | None:
    for j in range(i + 1, len(lines)):
        if lines[j].strip():
            return j
    return None


def _markdown_marks(lines: list[str], maybe: list[int]) -> list[_Mark] | None:
    """Headings of a Markdown book, or None when no Markdown heading level repeats."""
    found = _markdown_lines(lines, maybe)
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


def _plain_marks(lines: list[str], maybe: list[int]) -> list[_Mark]:
    marks = []
    for i in maybe:
        s = lines[i].strip()
        if not s or len(s) > MAX_HEADING_CHARS:
            continue
        md = _markdown_heading(s)
        text = md[1].strip() if md else s
        rank = _plain_heading(text) if text else None
        if rank is not None and not _continues_prose(lines, i):
            marks.append(_Mark(i, text, rank))
    return marks


def _drop_tables_of_contents(lines: list[str], marks: list[_Mark]) -> list[_Mark]:
    """Headings in a table of contents stay text.

    A run of headings with no text between them is a table of contents when at least three of them
    have no text under them and the run is not a volume → chapter → section chain. The last heading
    of the run, when text follows it, is the real first chapter after the table and is kept."""
    kept: list[_Mark] = []
    run: list[_Mark] = []

    def flush(last_has_text: bool) -> None:
        bodyless = run[:-1] if last_has_text else run[:]
        chain = all(a.rank < b.rank for a, b in pairwise(run))
        if len(bodyless) >= 3 and not chain:
            log.info(
                "lines %d-%d look like a table of contents (%d headings with no text between); kept as text",
                bodyless[0].line + 1,
                bodyless[-1].line + 1,
                len(bodyless),
            )
            kept.extend(run[len(bodyless) :])
        else:
            kept.extend(run)
        run.clear()

    for mark in marks:
        if run and any(lines[j] for j in range(run[-1].line + 1, mark.line)):
            flush(last_has_text=True)
        run.append(mark)
    if run:
        flush(last_has_text=any(lines[run[-1].line + 1 :]))
    return kept


# ---------------------------------------------------------------- text

_BLANK_LINES = re.compile(r"\n{3,}")


def _normalise_lines(text: str) -> list[str]:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    for line_break in "\r\u2028\u2029\x85":
        text = text.replace(line_break, "\n")
    return list(map(str.rstrip, text.split("\n")))


def _body(lines: list[str], text: str | None = None) -> str:
    """Lines as chapter text: one blank line between paragraphs, none at either end (``text``: the
    lines already joined)."""
    text = "\n".join(lines) if text is None else text
    return (_BLANK_LINES.sub("\n\n", text) if "\n\n\n" in text else text).strip("\n")


def _line_count(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.strip())


# Cut points, coarsest first: paragraphs, lines, sentence ends (CJK ends need no space after them):
# a run of 。！？…, or of .!? before a space, a closing quote or the end; then closing quotes and
# blanks. One character class first (`re` scans for it fast); the lookbehinds try a run of .!? once,
# from its start, not again from each dot (quadratic on a long run).
_SPLITTERS = (
    re.compile(r"\n\n+"),
    re.compile(r"\n"),
    re.compile(
        r"[。！？….!?](?:(?<=[。！？…])[。！？…]*|(?<=[.!?])(?<![.!?]{2})[.!?]*(?=[\s”’\"')\]」』]|$))"
        r"[”’」』\"'）)\]]*[ \t]*"
    ),
)
_MATCH_END = re.Match.end
_TEXT = re.compile(r"\S")  # what str.rstrip keeps: \s and str.isspace agree


def _hard_split(text: str, start: int, end: int, max_chars: int, ends: list[int]) -> None:
    """``text[start:end]`` cut every ``max_chars`` characters, at the last space of the window when
    it is in the window's second half; where each piece ends is appended to ``ends``."""
    stop = start + len(text[start:end].rstrip())
    while stop - start > max_chars:
        window = start + max_chars
        space = max(text.rfind(blank, start, window) for blank in " \t\u3000")
        start = space + 1 if space >= start + max_chars // 2 else window
        ends.append(start)
    if start < end:
        ends.append(end)


def _piece_ends(text: str, max_chars: int) -> list[int]:
    """Where each piece of ``text`` ends: pieces of at most ``max_chars`` characters (trailing space
    not counted) cut at the coarsest boundaries (``_SPLITTERS`` in order, then ``_hard_split``).

    Only a piece that is still too long is cut further, so the work is linear in the text."""
    ends: list[int] = []

    def cut(start: int, end: int, level: int) -> None:  # text[start:end] is too long
        if level == len(_SPLITTERS):
            _hard_split(text, start, end, max_chars, ends)
            return
        found = list(map(_MATCH_END, _SPLITTERS[level].finditer(text, start, end)))
        if found and found[-1] == end:
            found.pop()
        found.append(end)
        done = i = 0  # pieces before `i` are checked; those before `done` are in `ends`
        while i < len(found):
            a = found[i - 1] if i else start
            fit = bisect_right(found, a + max_chars, i)  # pieces i..fit-1 are short enough
            if fit > i:
                i = fit  # jumps of about max_chars characters, not one piece at a time
                continue
            if len(text[a : found[i]].rstrip()) > max_chars:
                ends.extend(found[done:i])
                cut(a, found[i], level + 1)
                done = i + 1
            i += 1
        ends.extend(found[done:])

    if len(text.rstrip()) <= max_chars:
        return [len(text)]
    cut(0, len(text), 0)
    return ends


def _chunk(text: str, max_chars: int) -> list[str]:
    """Balanced parts of at most ``max_chars`` characters, cut at the coarsest boundaries possible.

    The pieces are packed greedily into parts of at most ``limit`` characters (trailing space not
    counted), with the smallest ``limit`` that needs no more parts than ``max_chars`` does."""
    ends = _piece_ends(text, max_chars)

    def part_starts(limit: int, most: int) -> list[int]:
        """Where each part after the first starts, packing at ``limit``; no more than ``most``.

        A part starting at ``start`` is cut before the first later piece with text at or past
        ``start + limit`` (its text would end past the limit): the piece holding the first
        non-space character from there, found by bisection, so the cost is per part, not per piece."""
        found: list[int] = []
        first_end, full = ends[0], limit  # the part's first piece; where the part is full
        while len(found) < most:
            m = _TEXT.search(text, max(full, first_end))
            if m is None:
                break
            piece = bisect_right(ends, m.start())
            found.append(ends[piece - 1])
            first_end, full = ends[piece], ends[piece - 1] + limit
        return found

    count = len(part_starts(max_chars, len(text))) + 1
    low, high = 1, max_chars  # the smallest limit that still needs no more than `count` parts
    while low < high:
        mid = (low + high) // 2
        if len(part_starts(mid, count)) < count:
            high = mid
        else:
            low = mid + 1
    bounds = [0, *part_starts(low, len(text)), len(text)]
    parts = [text[a:b].strip("\n").rstrip() for a, b in pairwise(bounds)]
    return [part for part in parts if part.strip()]


# ---------------------------------------------------------------- splitting


def _headed_chapters(lines: list[str], marks: list[_Mark]) -> list[tuple[str, str, bool]]:
    chapters: list[tuple[str, str, bool]] = []
    front = _body(lines[: marks[0].line])
    if front.strip():
        if len(front) > FRONT_MATTER_CHARS or _line_count(front) > FRONT_MATTER_LINES:
            chapters.append((FRONT_MATTER_TITLE, front, False))
        else:
            log.info("dropped the text before the first heading (a title line, not a chapter): %r", front)

    prefix: list[str] = []
    for k, mark in enumerate(marks):
        end = marks[k + 1].line if k + 1 < len(marks) else len(lines)
        text = _body(lines[mark.line + 1 : end])
        if not text and k + 1 < len(marks) and mark.rank < marks[k + 1].rank:
            prefix.append(mark.title)  # a volume marker: "第一卷" + "第一章 雨夜"
            continue
        chapters.append((" ".join([*prefix, mark.title]), text, True))
        prefix = []
    return chapters


def _merge_short(chapters: list[tuple[str, str, bool]], min_chars: int) -> list[tuple[str, str, bool]]:
    def merge(a: tuple[str, str, bool], b: tuple[str, str, bool]) -> tuple[str, str, bool]:
        return a[0], "\n\n".join(part for part in (a[1], b[0], b[1]) if part), a[2]

    out: list[tuple[str, str, bool]] = []
    pending = None
    for chapter in chapters:
        if pending is not None:
            chapter, pending = merge(pending, chapter), None
        if len(chapter[1]) < min_chars:
            pending = chapter
        else:
            out.append(chapter)
    if pending is not None:
        out.append(merge(out.pop(), pending) if out else pending)
    return out


def split_chapters(text: str, *, max_chars: int = DEFAULT_MAX_CHARS, min_chars: int = 0) -> list[Chapter]:
    """Split a book into chapters by its headings, or into balanced parts when it has none.

    The rules are in this module's docstring. A blank book gives an empty list."""
    if max_chars < 1:
        raise InputError(f"max_chars must be at least 1, got {max_chars}")
    if min_chars < 0:
        raise InputError(f"min_chars must be 0 or more, got {min_chars}")
    lines = _normalise_lines(text)
    if not any(lines):
        return []
    joined = "\n".join(lines)
    maybe = _maybe_headings(lines, joined)
    marks = _markdown_marks(lines, maybe)
    if marks is None:
        marks = _plain_marks(lines, maybe)
    marks = _drop_tables_of_contents(lines, marks)

    if not marks:
        parts = _chunk(_body(lines, joined), max_chars)
        log.info(
            "no chapter headings found; cut the book into %d parts of ≤ %d characters", len(parts), max_chars
        )
        return [Chapter(n, f"Part {n}", part, False) for n, part in enumerate(parts, 1)]

    found = _merge_short(_headed_chapters(lines, marks), min_chars)
    chapters = [Chapter(n, title, body, heading) for n, (title, body, heading) in enumerate(found, 1)]
    for ch in chapters:
        if not ch.text:
            log.warning("chapter %d %r has no text", ch.number, ch.title)
        elif len(ch.text) > max_chars:
            log.warning(
                "chapter %d %r is %d characters, more than max_chars=%d; it is kept whole but may not "
                "fit the model's context",
                ch.number,
                ch.title,
                len(ch.text),
                max_chars,
            )
    return chapters


# ---------------------------------------------------------------- ranges

_DASH = "-–—~～－"
# (?!\d): a shorter first number is never tried, which would take quadratic time on a long one.
_RANGE_ITEM = re.compile(rf"(?P<a>\d*)(?!\d)(?P<dash>[{_DASH}])?(?P<b>\d*)")


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut short when it is long."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}… ({len(text):,} characters)"


def _chapter_number(digits: str, count: int) -> int | None:
    """The number ``digits`` (decimal digits of any script) stands for, or None when it is more than
    ``count``: a number of thousands of digits is never converted (Python refuses above 4300)."""
    ascii_digits = "".join(str(unicodedata.digit(ch)) for ch in digits).lstrip("0") or "0"
    return int(ascii_digits) if len(ascii_digits) <= len(str(count)) else None


def parse_range(spec: str, count: int) -> list[int]:
    """Chapter numbers from ``"3-7"``, ``"1,3,5-6"``, ``"4-"`` (to the end), ``"-2"`` (from the
    start); ``""``, ``"all"`` or ``"*"`` mean every chapter. Sorted, without repeats.

    Out-of-range or malformed specs raise ``InputError`` naming the valid range 1..count."""
    spec = spec.strip()
    if spec.lower() in ("", "all", "*"):
        return list(range(1, count + 1))
    valid = (
        f"the book has {count} chapters, so use numbers 1..{count}" if count else "the book has no chapters"
    )
    shown = _shown(spec)
    if count < 1:
        raise InputError(f"chapter range {shown}: {valid}")
    chosen: set[int] = set()
    pieces = re.split(rf"([{_DASH}])", spec)  # text, dash, text, …: no space around a dash
    pieces[2::2] = [piece.lstrip() for piece in pieces[2::2]]
    pieces[:-1:2] = [piece.rstrip() for piece in pieces[:-1:2]]
    for item in re.split(r"[,，、;；\s]+", "".join(pieces)):
        if not item:
            continue
        m = _RANGE_ITEM.fullmatch(item)
        if not m or not (m.group("a") or m.group("b")) or (m.group("dash") is None and not m.group("a")):
            raise InputError(
                f"chapter range {shown}: {_shown(item)} is not a number or range like 3, 3-7, 4- or -2; "
                f"{valid}"
            )
        if m.group("dash") is None:
            first = last = _chapter_number(m.group("a"), count)
        else:
            first = _chapter_number(m.group("a"), count) if m.group("a") else 1
            last = _chapter_number(m.group("b"), count) if m.group("b") else count
        if first is None or last is None or not (1 <= first <= count and 1 <= last <= count):
            raise InputError(f"chapter range {shown}: {_shown(item)} is out of range; {valid}")
        if first > last:
            raise InputError(f"chapter range {shown}: {_shown(item)} runs backwards; write {last}-{first}")
        chosen.update(range(first, last + 1))
    if not chosen:
        raise InputError(f"chapter range {shown} names no chapters; {valid}")
    return sorted(chosen)
