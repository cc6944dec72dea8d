"""Text that reaches XML or a PDF string is made legal once (``mangaka.export.xmltext.xml_safe``,
applied where ``BookInfo`` and ``Section`` are made), whatever a title, a name or a line holds:
C0 control characters, lone surrogates, U+FFFE/U+FFFF, bidirectional controls, emoji, markup.

The unit tests pin the function; the property tests (hypothesis) export books with arbitrary text
in the title, the series, the cast's names, the chapter titles and a screenplay's lines, and check
that every XML member of every CBZ and EPUB parses, that comicapi reads the ComicInfo, that qpdf
finds nothing wrong in the PDF and shows its bookmarks as written, and (on fewer examples: it
takes seconds a book) that epubcheck finds nothing wrong in the EPUB. epubcheck and qpdf are
Debian's packages, skipped without them unless MANGAKA_REQUIRE_EXPORT_TOOLS=1 (see
test_export.py)."""

from __future__ import annotations

import json
import logging
import tempfile
import zipfile
from dataclasses import dataclass, replace
from html import escape
from pathlib import Path
from xml.etree import ElementTree as ET

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PIL import Image

from mangaka.export import MAX_NAME_CHARS, BookInfo, Section, export, export_book, file_stem, image_page
from mangaka.export.sources import screenplay_info, storyboard_section
from mangaka.export.xmltext import xml_safe
from mangaka.screenplay.example import example_screenplay
from mangaka.screenplay.models import MAX_LINE, MAX_NAME, MAX_TITLE
from tests.unit.support import need, run

BOUNDED = settings(
    deadline=None,  # qpdf and comicapi run in every example
    database=None,  # nothing written into the checkout
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
XHTML = "{http://www.w3.org/1999/xhtml}"
DC = "{http://purl.org/dc/elements/1.1/}"
# Pieces of text a title or a name may hold, the hostile ones among them: every kind of character
# XML forbids, a surrogate pair written as two code points (and the wrong way round), characters
# XML allows but discourages, bidirectional controls, emoji sequences, markup and PDF delimiters.
PIECES = (
    "\x00", "\x01", "\x08", "\x0b", "\x0c", "\x0e", "\x1b", "\x1f", "\x7f", "\x85", "\x9f",
    "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00", "\ude00\ud83d",
    "\ufffe", "\uffff", "\ufdd0", "\ufeff", "\U0001fffe", "\U0010ffff",
    "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
    "\u2069", "\u2028", "\u2029", "\u00a0", "\u3000", "\u0301",
    "😀", "👩\u200d👩\u200d👧", "🇯🇵", "雨夜", "아", "ا", "Mei",
    "\t", "\n", "\r", "\r\n", " ", "&", "<", ">", '"', "'", "]]>", "<!--", "&amp;", "\\", "(", ")",
)  # fmt: skip
FORBIDDEN_C0 = [chr(c) for c in range(0x20) if c not in (0x9, 0xA, 0xD)]


def _surrogate(ch: str) -> bool:
    return 0xD800 <= ord(ch) <= 0xDFFF


def texts(max_size: int = 16, surrogates: bool = True) -> st.SearchStrategy[str]:
    """Arbitrary text: any code point (surrogates too, unless told) mixed with ``PIECES``."""
    chars = st.characters(exclude_categories=() if surrogates else ("Cs",))
    pieces = st.sampled_from([p for p in PIECES if surrogates or not any(map(_surrogate, p))])
    return st.lists(st.one_of(pieces, chars), max_size=max_size).map("".join)


def legal(text: str) -> str:
    """What the export should write for ``text``, worked out another way than ``xml_safe``: pairs
    joined by a UTF-16 round trip, then each character XML 1.0 forbids dropped (a surrogate left
    alone becomes U+FFFD)."""
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    out = []
    for ch in joined:
        c = ord(ch)
        if c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD or c >= 0x10000:
            out.append(ch)
        elif _surrogate(ch):
            out.append("\ufffd")
    return "".join(out)


def parsed(text: str) -> str:
    """``text`` as an XML parser hands it back: its line ends normalized to line feeds."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


PAGES = tuple(image_page(Image.new("RGB", (40, 56), (30 * n, 200, 90)), 96, f"page {n}") for n in range(1, 7))


# --------------------------------------------------------------------------- the function


def test_every_character_xml_forbids_is_removed_or_replaced_with_one_warning_naming_the_field(caplog):
    caplog.set_level(logging.WARNING, logger="mangaka.export")
    assert xml_safe("A\x01B\x0b", "the title") == "AB"
    assert caplog.messages == [
        "export: the title held 2 characters XML forbids (U+0001, U+000B); they were removed"
    ]
    caplog.clear()
    assert xml_safe("".join(FORBIDDEN_C0) + "x\ufffe\uffff", "the series") == "x"
    [message] = caplog.messages
    assert message.startswith("export: the series held 31 characters XML forbids (U+0000, U+0001,")
    assert message.endswith("and 23 more); they were removed")
    caplog.clear()
    assert xml_safe("a\ud800b\udfff", "character name 2") == "a\ufffdb\ufffd"
    assert caplog.messages == [
        "export: character name 2 held 2 characters XML forbids (U+D800, U+DFFF); "
        "they were replaced by U+FFFD"
    ]
    caplog.clear()
    assert xml_safe("\x0b\udc00", "the title of chapter 3") == "\ufffd"
    assert "lone surrogates were replaced by U+FFFD, the rest removed" in caplog.messages[0]
    caplog.clear()
    assert xml_safe("x\x1f", "a chapter title") == "x"
    assert caplog.messages == [
        "export: a chapter title held 1 character XML forbids (U+001F); it was removed"
    ]


def test_text_xml_allows_comes_back_unchanged_and_without_a_warning(caplog):
    caplog.set_level(logging.WARNING, logger="mangaka.export")
    allowed = (
        "tab\tnewline\ncr\r bidi \u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069 "
        "emoji 😀 👩\u200d👩\u200d👧 🇯🇵 discouraged \x7f\x85\x9f\ufdd0\U0001fffe\U0010ffff \ufeff\ufffd "
        "markup & < > \" ' ]]> 雨夜 아 ا"
    )
    assert xml_safe(allowed, "the title") is allowed
    assert xml_safe("", "the title") == ""
    assert caplog.messages == []


def test_a_surrogate_pair_written_as_two_code_points_becomes_its_character(caplog):
    caplog.set_level(logging.WARNING, logger="mangaka.export")
    assert xml_safe("rain \ud83d\ude00", "the title") == "rain 😀"
    assert caplog.messages == []
    assert xml_safe("\ude00\ud83d", "the title") == "\ufffd\ufffd"  # the wrong way round: two halves


@given(texts(40))
@settings(BOUNDED, max_examples=300)
def test_xml_safe_gives_what_xml_allows_and_nothing_else(text):
    clean = xml_safe(text, "the title")
    assert clean == legal(text)
    element = ET.fromstring(f"<t>{escape(clean, quote=False)}</t>".encode())  # UTF-8: no surrogate left
    assert (element.text or "") == parsed(clean)


def test_the_book_facts_are_made_legal_once_where_they_are_made(caplog):
    caplog.set_level(logging.WARNING, logger="mangaka.export")
    info = BookInfo("Rain\x01", "ja\x0b", series="\ud800S", characters=("Mei\x1b", "\x01", "A\u202eB"))
    section = Section("Night\x0c", PAGES[:1], 2)
    assert (info.title, info.series, info.language, info.characters) == (
        "Rain",
        "\ufffdS",
        "ja",
        ("Mei", "A\u202eB"),
    )
    assert section.title == "Night"
    named = " | ".join(caplog.messages)
    for field in ("the title ", "the series", "the language", "character name 1", "character name 2",
                  "the title of chapter 2"):  # fmt: skip
        assert f"export: {field}" in named
    assert "character name 3" not in named
    caplog.clear()
    replace(info, title=section.title, number=2)  # what export_book does: nothing more to say
    assert caplog.messages == []
    assert BookInfo("x", "not a tag").language == "und"
    assert "the language 'not a tag' is not a language tag" in caplog.text


def test_file_names_from_titles_drop_what_a_file_name_cannot_hold_and_fit_255_bytes(tmp_path):
    assert file_stem("Rain\ud800Night\ufffe") == "Rain Night"
    long = file_stem("😀" * MAX_NAME_CHARS)
    assert len(long.encode("utf-8")) <= 240 and set(long) == {"😀"}
    book = export_book([Section("😀" * 80, PAGES[:1], 1)], BookInfo("雨" * 119), ["cbz"], tmp_path)
    assert [len(p.name.encode("utf-8")) <= 255 for p in book.files] == [True, True]


# --------------------------------------------------------------------------- the containers


@dataclass(frozen=True)
class Book:
    """What a generated book was given, and what its containers should say."""

    title: str
    series: str
    names: tuple[str, ...]
    chapters: tuple[str, ...]

    def sections(self) -> list[Section]:
        return [Section(t, PAGES[i % len(PAGES) :][:1], i + 1) for i, t in enumerate(self.chapters)]

    def info(self) -> BookInfo:
        return BookInfo(self.title, "ja", "rtl", series=self.series, characters=self.names)

    def labels(self) -> list[str]:
        """The chapters' titles as the EPUB's navigation shows them (a blank one by its number)."""
        return [
            parsed(legal(t)) if legal(t).strip() else f"Chapter {i}" for i, t in enumerate(self.chapters, 1)
        ]


@st.composite
def books(draw: st.DrawFn, chapters: int = 3, surrogates: bool = True) -> Book:
    text = texts(surrogates=surrogates)
    return Book(
        draw(text),
        draw(text),
        tuple(draw(st.lists(texts(10, surrogates), max_size=4))),
        tuple(draw(st.lists(text, min_size=1, max_size=chapters))),
    )


NASTY = Book(
    "\x01Rain\x0b \u202eNight\u202c 😀 \ud800 & <b>",
    "\ufffe\u200fSeries\uffff",
    ("Mei\x1b", "\x01", "\u2067سارا\u2069", "\ud83d\ude00Akira"),
    ("\x0c", "第一章\x07 雨夜 ]]>", "\udfff(\\)"),
)


def check_cbz(path: Path, book: Book, pages: int) -> None:
    from comicapi.comicarchive import ComicArchive

    with zipfile.ZipFile(path) as cbz:
        root = ET.fromstring(cbz.read("ComicInfo.xml"))
    assert root.findtext("Title", "") == parsed(legal(book.title))
    assert root.findtext("Series") == (parsed(legal(book.series)) if legal(book.series) else None)
    names = [parsed(legal(n)) for n in book.names if legal(n).strip()]
    assert root.findtext("Characters") == (", ".join(names) if names else None)
    archive = ComicArchive(str(path))
    assert archive.has_cix() and archive.read_cix().page_count == pages


def check_epub(path: Path, book: Book) -> None:
    with zipfile.ZipFile(path) as epub:
        members = {
            n: ET.fromstring(epub.read(n)) for n in epub.namelist() if n.endswith((".xml", ".opf", ".xhtml"))
        }
    assert len(members) == 3 + len(book.chapters)  # container, package, navigation, a page each
    title = parsed(legal(book.title))
    assert members["OEBPS/content.opf"].findtext(f".//{DC}title") == (title if title.strip() else "Untitled")
    links = [a.text for a in members["OEBPS/nav.xhtml"].iter(f"{XHTML}a")]
    assert links == book.labels()


def check_pdf(path: Path, book: Book) -> None:
    assert "No syntax or stream encoding errors" in run(*need("qpdf"), "--check", str(path))
    outlines = json.loads(run(*need("qpdf"), "--json", "--json-key=outlines", str(path)))["outlines"]
    assert [o["title"] for o in outlines] == [legal(t) for t in book.chapters]


@given(books())
@example(NASTY)
@settings(BOUNDED, max_examples=100)
def test_every_container_parses_whatever_the_title_names_and_chapter_titles_hold(book):
    with tempfile.TemporaryDirectory() as folder:
        cbz, epub, pdf = export(book.sections(), book.info(), ["cbz", "epub", "pdf"], folder, "book")
        check_cbz(cbz, book, len(book.chapters))
        check_epub(epub, book)
        check_pdf(pdf, book)


def epubcheck(path: Path) -> str:
    """epubcheck's report on ``path`` (its JVM told to start fast: half the time on a small book)."""
    command = need("epubcheck")
    command[1:1] = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    return run(*command, str(path))


@given(books(chapters=6))
@example(NASTY)
@settings(BOUNDED, max_examples=3)
def test_epubcheck_and_qpdf_pass_whatever_the_title_names_and_chapter_titles_hold(book):
    with tempfile.TemporaryDirectory() as folder:
        epub, pdf = export(book.sections(), book.info(), ["epub", "pdf"], folder, "book")
        assert "0 fatals / 0 errors / 0 warnings" in epubcheck(epub)
        check_pdf(pdf, book)


@st.composite
def screenplays(draw: st.DrawFn) -> dict:
    """The example screenplay with arbitrary text in its title, names and lines, as the screenplay
    loader takes them: no lone surrogate (it refuses those by name), within its lengths, the names
    and lines ending in a mark (it wants them not blank and the names distinct)."""
    piece = max(len(p) for p in PIECES)  # code points a drawn piece may have
    data = example_screenplay()
    data["title"] = draw(texts(MAX_TITLE // piece, surrogates=False)) or "\x01"
    for mark, character in zip("AB", data["characters"], strict=True):
        character["name"] = draw(texts((MAX_NAME - 1) // piece, surrogates=False)) + mark
    for line in data["dialogue"]:
        line["line"] = draw(texts((MAX_LINE - 1) // piece, surrogates=False)) + "!"
    return data


FIXED_SCREENPLAY = example_screenplay() | {"title": "\x01\x0b"}
FIXED_SCREENPLAY["characters"] = [
    c | {"name": name}
    for c, name in zip(FIXED_SCREENPLAY["characters"], ("Akira\x0b😀", "\u2028\u202eMei\x1f"), strict=True)
]
FIXED_SCREENPLAY["dialogue"] = [
    d | {"line": f"\x01{d['line']}\x1b\u200f\ufffe"} for d in FIXED_SCREENPLAY["dialogue"]
]


@given(screenplays())
@example(FIXED_SCREENPLAY)
@settings(BOUNDED, max_examples=3)
def test_a_screenplay_with_arbitrary_title_names_and_lines_exports_three_files_readers_open(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "screenplay.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        section, screenplay = storyboard_section(path, 1, "rtl")
        cbz, epub, pdf = export(
            [section], screenplay_info(screenplay, "rtl"), ["cbz", "epub", "pdf"], folder, "x"
        )
        # What the screenplay holds (its names trimmed of white space, U+2028 included) is exported.
        names = tuple(c.name for c in screenplay.characters)
        book = Book(screenplay.title, "", names, (screenplay.title,))
        check_cbz(cbz, book, len(section.pages))
        with zipfile.ZipFile(epub) as members:
            for name in members.namelist():
                if name.endswith((".xml", ".opf", ".xhtml")):
                    ET.fromstring(members.read(name))
        assert "0 fatals / 0 errors / 0 warnings" in epubcheck(epub)
        assert "No syntax or stream encoding errors" in run(*need("qpdf"), "--check", str(pdf))
