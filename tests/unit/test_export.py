"""CBZ, EPUB and PDF export, each file opened by real tools: epubcheck, qpdf, pdfinfo and pdfimages
(Debian's packages; CI installs them and sets MANGAKA_REQUIRE_EXPORT_TOOLS=1, elsewhere a test
without them skips), and comictagger's comicapi for ComicInfo.xml."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from mangaka.errors import InputError
from mangaka.export import (
    BookInfo,
    Page,
    Section,
    check_name,
    export,
    export_book,
    image_page,
    parse_formats,
    read_page,
)
from mangaka.export.strip import MAX_RATIO, cut_points, flat_rows, slice_strip
from mangaka.screenplay.example import example_screenplay
from tests.unit.support import need, run

ROOT = Path(__file__).resolve().parents[2]
A4 = (2480, 3508)


def drawn_page(n: int, size: tuple[int, int] = A4, dpi: float = 300) -> Page:
    """A page with a mark of its own (no two pages alike) and colour (lossless is checked)."""
    image = Image.new("RGB", size, (250, 248, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((100, 100, 300 + 150 * n, 500), fill=(20 * n % 256, 90, 200))
    draw.ellipse((size[0] // 2, size[1] // 2, size[0] // 2 + 97, size[1] // 2 + 61), fill=(1, 2, 3))
    return image_page(image, dpi, f"page {n}")


def book(direction: str = "rtl") -> tuple[list[Section], BookInfo]:
    pages = [drawn_page(n) for n in range(1, 6)]
    sections = [Section("第一章 雨夜", tuple(pages[:3]), 1), Section("Chapter Two", tuple(pages[3:]), 2)]
    return sections, BookInfo("Rain Book", "zh", direction, characters=("沈青衣", "Mei"))


def pdf_facts(path: Path) -> dict:
    info = run(*need("pdfinfo"), str(path))
    assert "No syntax or stream encoding errors" in run(*need("qpdf"), "--check", str(path))
    facts = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    objects = json.loads(run(*need("qpdf"), "--json", "--json-key=qpdf", str(path)))["qpdf"][1]
    catalog = next(o.get("value", o) for o in objects.values() if isinstance(o, dict)
                   and o.get("value", o).get("/Type") == "/Catalog")  # fmt: skip
    return {
        "pages": int(facts["Pages"]),
        "size": facts["Page size"].strip(),
        "catalog": catalog,
        "objects": objects,
    }


# ------------------------------------------------------------------------ the three files


def test_a_right_to_left_book_opens_in_each_tool_and_says_it_reads_right_to_left(tmp_path):
    sections, info = book("rtl")
    files = export(sections, info, ["cbz", "epub", "pdf"], tmp_path, "Rain Book")
    assert [p.name for p in files] == ["Rain Book.cbz", "Rain Book.epub", "Rain Book.pdf"]
    pages = [page for s in sections for page in s.pages]

    # EPUB: epubcheck finds nothing; right to left; pre-paginated; one spine item per page.
    report = run(*need("epubcheck"), str(tmp_path / "Rain Book.epub"))
    assert "0 fatals / 0 errors / 0 warnings" in report
    with zipfile.ZipFile(tmp_path / "Rain Book.epub") as epub:
        assert (
            epub.namelist()[0] == "mimetype" and epub.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
        )
        opf = epub.read("OEBPS/content.opf").decode()
        nav = epub.read("OEBPS/nav.xhtml").decode()
        first = epub.read("OEBPS/page-0001.xhtml").decode()
    assert 'page-progression-direction="rtl"' in opf and "pre-paginated" in opf
    assert opf.count("<itemref ") == len(pages) and 'properties="cover-image"' in opf
    assert "<dc:language>zh</dc:language>" in opf and "<dc:title>Rain Book</dc:title>" in opf
    assert nav.index("第一章 雨夜") < nav.index("Chapter Two") and 'href="page-0004.xhtml">Chapter Two' in nav
    assert 'content="width=2480, height=3508"' in first

    # PDF: five A4 pages at 300 dpi, right to left, a bookmark per chapter, images lossless.
    facts = pdf_facts(tmp_path / "Rain Book.pdf")
    assert facts["pages"] == 5 and facts["size"].startswith("595.2 x 841.92 pts")
    assert facts["catalog"]["/ViewerPreferences"]["/Direction"] == "/R2L"
    titles = run(*need("qpdf"), "--json", "--json-key=outlines", str(tmp_path / "Rain Book.pdf"))
    assert [o["title"] for o in json.loads(titles)["outlines"]] == ["第一章 雨夜", "Chapter Two"]
    out = tmp_path / "images"
    out.mkdir()
    run(*need("pdfimages"), "-png", str(tmp_path / "Rain Book.pdf"), str(out / "img"))
    extracted = sorted(out.glob("img-*.png"))
    assert len(extracted) == len(pages)
    for got, page in zip(extracted, pages, strict=True):
        with Image.open(got) as a, Image.open(io.BytesIO(page.data)) as b:
            assert a.convert("RGB").tobytes() == b.convert("RGB").tobytes(), got.name

    # CBZ: read back by comicapi; pages stored as they were, in order; marked right-to-left manga.
    from comicapi.comicarchive import ComicArchive

    archive = ComicArchive(str(tmp_path / "Rain Book.cbz"))
    assert archive.seems_to_be_a_comic_archive() and archive.has_cix()
    meta = archive.read_cix()
    assert (meta.title, meta.language, meta.manga, meta.page_count) == (
        "Rain Book",
        "zh",
        "YesAndRightToLeft",
        5,
    )
    assert meta.characters == "沈青衣, Mei"
    assert [p.get("Type") for p in meta.pages] == ["FrontCover", None, None, None, None]
    assert all((p["ImageWidth"], p["ImageHeight"]) == ("2480", "3508") for p in meta.pages)
    assert archive.get_page_name_list() == ["001.png", "002.png", "003.png", "004.png", "005.png"]
    for i, page in enumerate(pages):
        data = archive.get_page(i)
        assert data == page.data  # stored, not recompressed
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
    with zipfile.ZipFile(tmp_path / "Rain Book.cbz") as cbz:
        assert all(
            i.compress_type == zipfile.ZIP_STORED for i in cbz.infolist() if i.filename.endswith(".png")
        )


def test_every_kind_of_page_image_goes_into_the_pdf_whole(tmp_path):
    """A JPEG is embedded as its own bytes; an opaque 8-bit PNG as its own zlib stream; a PNG with
    alpha, a palette or 16 bits is decoded and stored losslessly (opaque pixels unchanged)."""
    base = Image.new("RGB", (600, 840), (240, 230, 220))
    ImageDraw.Draw(base).rectangle((50, 60, 400, 500), fill=(10, 120, 200))
    jpeg = image_page(base, 150, "jpeg page", kind="jpeg")
    grey = image_page(base.convert("L"), 150, "grey page")
    rgba = image_page(base.convert("RGBA"), 150, "rgba page")
    palette = image_page(base.convert("P"), 150, "palette page")
    buffer = io.BytesIO()
    base.save(buffer, format="PNG", interlace=True)
    interlaced = Page(buffer.getvalue(), "png", 600, 840, 150, "interlaced page")
    pages = (jpeg, grey, rgba, palette, interlaced)
    [path] = export([Section("Kinds", pages)], BookInfo("Kinds"), ["pdf"], tmp_path, "kinds")
    facts = pdf_facts(path)
    assert facts["pages"] == 5 and facts["size"].startswith("288 x 403.2 pts")
    out = tmp_path / "images"
    out.mkdir()
    run(*need("pdfimages"), "-all", str(path), str(out / "img"))
    extracted = sorted(out.iterdir())
    assert [p.suffix for p in extracted] == [".jpg", ".png", ".png", ".png", ".png"]
    assert extracted[0].read_bytes() == jpeg.data
    for got, page in zip(extracted[1:], pages[1:], strict=True):
        with Image.open(got) as a, Image.open(io.BytesIO(page.data)) as b:
            want = b.convert("L" if b.mode == "L" else "RGB")
            assert a.convert(want.mode).tobytes() == want.tobytes(), page.source


def test_a_left_to_right_book_is_marked_left_to_right_in_all_three(tmp_path):
    sections, info = book("ltr")
    export(sections, info, ["cbz", "epub", "pdf"], tmp_path, "comic")
    from comicapi.comicarchive import ComicArchive

    assert ComicArchive(str(tmp_path / "comic.cbz")).read_cix().manga == "No"
    with zipfile.ZipFile(tmp_path / "comic.epub") as epub:
        assert 'page-progression-direction="ltr"' in epub.read("OEBPS/content.opf").decode()
    assert "/Direction" not in pdf_facts(tmp_path / "comic.pdf")["catalog"].get("/ViewerPreferences", {})


def test_a_book_is_one_file_per_chapter_and_one_for_the_whole_book_in_order(tmp_path):
    sections, info = book("rtl")
    result = export_book(sections, info, ["cbz", "pdf"], tmp_path, missing=["chapter 3 (Dawn): failed"])
    names = [p.name for p in result.files]
    assert names == [
        "01 第一章 雨夜.cbz", "01 第一章 雨夜.pdf", "02 Chapter Two.cbz", "02 Chapter Two.pdf",
        "Rain Book.cbz", "Rain Book.pdf",
    ]  # fmt: skip
    from comicapi.comicarchive import ComicArchive

    chapter = ComicArchive(str(tmp_path / "02 Chapter Two.cbz")).read_cix()
    assert (chapter.title, chapter.series, chapter.issue, chapter.page_count) == (
        "Chapter Two",
        "Rain Book",
        "2",
        2,
    )
    assert pdf_facts(tmp_path / "Rain Book.pdf")["pages"] == 5
    assert "chapter 3 (Dawn): failed" in result.summary()


def test_a_webtoon_strip_is_cut_at_its_gutters_into_readable_slices(tmp_path):
    width, panels, gutter = 800, [900, 700, 1200, 400, 1100, 300], 40
    strip = Image.new("RGB", (width, sum(panels) + gutter * (len(panels) + 1)), "white")
    draw, y = ImageDraw.Draw(strip), gutter
    for n, h in enumerate(panels):
        draw.rectangle((30, y, width - 30, y + h - 1), fill=(40 * n, 120, 60))
        draw.line((30, y + h // 2, width - 30, y + h // 2 + 5), fill="black", width=3)
        y += h + gutter
    page = image_page(strip, 96, "strip")
    slices = slice_strip(page)
    flat = flat_rows(strip)
    assert len(slices) > 1 and all(s.width == width and s.height <= width * MAX_RATIO for s in slices)
    top = 0
    for s in slices[:-1]:
        top += s.height
        assert flat[top - 1] and flat[top], f"cut at row {top} is inside a panel"
    joined = Image.new("RGB", strip.size)
    top = 0
    for s in slices:
        with Image.open(io.BytesIO(s.data)) as part:
            joined.paste(part, (0, top))
        top += s.height
    assert top == strip.height and joined.tobytes() == strip.tobytes()
    files = export(
        [Section("Strip", (page,))], BookInfo("Strip", direction="vertical"), ["epub", "cbz"], tmp_path, "s"
    )
    assert [f.suffix for f in files] == [".cbz", ".epub"]  # FORMATS order, whatever order was asked
    assert "0 errors" in run(*need("epubcheck"), str(files[1]))
    with zipfile.ZipFile(files[0]) as cbz:
        assert len([n for n in cbz.namelist() if n.endswith(".png")]) == len(slices)


def test_a_panel_taller_than_a_slice_is_cut_inside_it():
    flat = [True] * 10 + [False] * 3000 + [True] * 10
    cuts = cut_points(flat, 1280, 320)
    assert cuts[-1] == len(flat) and all(b - a <= 1280 for a, b in zip([0, *cuts], cuts, strict=False))


# ------------------------------------------------------------------------ hostile input


def test_bad_input_is_refused_by_name_and_leaves_no_file(tmp_path):
    sections, info = book()
    with pytest.raises(InputError, match="no pages to export"):
        export([Section("Empty", ())], info, ["cbz"], tmp_path, "x")
    odd = Section("Odd", (drawn_page(1), drawn_page(2, (2150, 3035))))
    with pytest.raises(InputError, match=r"page 2 is 2150x3035 pixels but page 1 is 2480x3508"):
        export([odd], info, ["pdf"], tmp_path, "x")
    empty = tmp_path / "page_001.png"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match=r"page_001.png is empty \(0 bytes\)"):
        read_page(empty)
    (tmp_path / "not.png").write_bytes(b"GIF89a not really")
    with pytest.raises(InputError, match=r"not\.png is not a readable image"):
        read_page(tmp_path / "not.png")
    for name in ("a/b", "..", "../up", "x\\y", ""):
        with pytest.raises(InputError, match="not a plain file name"):
            check_name(name, "--export name")
    with pytest.raises(InputError, match="mobi is not an export format"):
        parse_formats("cbz,mobi")
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    with pytest.raises(NotADirectoryError) as caught:
        export(sections, info, ["cbz"], blocker / "out", "x")
    assert caught.value.filename == str(blocker / "out" / "x.cbz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "not.png", "page_001.png"]


def test_a_failure_while_writing_leaves_no_partial_file(tmp_path):
    sections, info = book()
    broken = Page(b"\x89PNG\r\n\x1a\n broken", "png", *A4, 300, "page 9")
    with pytest.raises(InputError, match="page 9 is not a readable image"):
        export([Section("X", (*sections[0].pages, broken))], info, ["cbz", "pdf"], tmp_path, "broken")
    assert [p.name for p in tmp_path.iterdir()] == ["broken.cbz"]  # the CBZ was whole; no PDF, no temp file


# ------------------------------------------------------------------------ the command line


def _page(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    screenplay = tmp_path / "sp.json"
    screenplay.write_text(json.dumps(example_screenplay(), ensure_ascii=False), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mangaka", "page", str(screenplay), "-o", str(tmp_path / "out"), *args],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_page_export_writes_the_three_beside_the_pages_holding_those_files(tmp_path):
    """The command in docs/pages.md, as written there, on a screenplay."""
    command = "python -m mangaka page screenplay.json -o pages/ --export cbz,epub,pdf"
    assert command in (ROOT / "docs" / "pages.md").read_text(encoding="utf-8")
    screenplay = tmp_path / "screenplay.json"
    screenplay.write_text(json.dumps(example_screenplay(), ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, *command.split()[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    title = example_screenplay()["title"]
    out = tmp_path / "pages"
    assert {p.name for p in out.iterdir()} >= {
        f"{title}.cbz",
        f"{title}.epub",
        f"{title}.pdf",
        "page_001.png",
    }
    with zipfile.ZipFile(out / f"{title}.cbz") as cbz:
        assert cbz.read("001.png") == (out / "page_001.png").read_bytes()
    assert "0 errors" in run(*need("epubcheck"), str(out / f"{title}.epub"))
    assert pdf_facts(out / f"{title}.pdf")["size"].startswith("595.2 x 841.92")


def test_an_unknown_export_format_is_refused_before_anything_is_written(tmp_path):
    done = _page(tmp_path, "--export", "cbz,mobi")
    assert done.returncode != 0 and "--export: mobi is not an export format" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def test_book_export_draws_the_written_chapters_and_names_the_one_not_written(tmp_path):
    """``book --export``: chapter 1's screenplay is there (written by an earlier run), chapter 2's
    server never answers. The book is exported with chapter 1's storyboard pages and says it lacks
    chapter 2; the run fails (exit 1) so a script sees the book is not whole."""
    novel = tmp_path / "novel.txt"
    novel.write_text(
        'Chapter 1: Rain\n\n"Go," said Mei.\n\nChapter 2: Sun\n\nIlse slept.\n', encoding="utf-8"
    )
    out = tmp_path / "screenplays"
    out.mkdir()
    screenplay = example_screenplay()
    (out / "01 Chapter 1 Rain.json").write_text(json.dumps(screenplay, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mangaka", "book", str(novel), "--remote", "http://127.0.0.1:9",
         "--out", str(out), "--export", "cbz,epub"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert "exported without chapter 2 (Chapter 2: Sun)" in done.stderr and "Traceback" not in done.stderr
    from comicapi.comicarchive import ComicArchive

    chapter = ComicArchive(str(out / f"01 {screenplay['title']}.cbz")).read_cix()
    whole = ComicArchive(str(out / "novel.cbz")).read_cix()
    assert (chapter.title, chapter.series, chapter.manga) == (
        screenplay["title"],
        "novel",
        "YesAndRightToLeft",
    )
    assert whole.page_count == chapter.page_count >= 1
    assert "0 errors" in run(*need("epubcheck"), str(out / "novel.epub"))
