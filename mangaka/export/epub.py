"""EPUB 3, fixed layout (pre-paginated): one XHTML page per image, at the image's own size.

Written with the standard library (``zipfile``, escaped templates) rather than a package: an EPUB
is a ZIP whose first member is the stored ``mimetype``, a ``container.xml`` pointing at the package
document, the package document (metadata, manifest, spine) and a navigation document. The EPUB
libraries on PyPI need lxml, which has no wheels for LoongArch, and none writes the fixed-layout
``rendition:`` properties for us. ``epubcheck`` (Debian's package) checks what this writes in the
tests.

- ``rendition:layout`` is ``pre-paginated`` and each page's ``viewport`` is the image's size, so a
  reader shows the page whole, never reflowed.
- The spine's ``page-progression-direction`` is ``rtl`` for manga: the reader turns leftwards.
- The first page is the cover (``cover-image``); the navigation document lists the chapters.
- The identifier is a UUID derived from the pages, so the same pages give the same book.
"""

from __future__ import annotations

import hashlib
import time
import uuid
import zipfile
from collections.abc import Sequence
from html import escape
from pathlib import Path

from ..fileio import atomic_output
from .pages import BookInfo, Page, Section

UNTITLED = "Untitled"  # the title of a book whose title is blank
CONTAINER = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>
"""

PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="{lang}" lang="{lang}">
<head>
<meta charset="UTF-8"/>
<title>{title}</title>
<meta name="viewport" content="width={width}, height={height}"/>
<style>html, body {{ margin: 0; padding: 0; }}
img {{ display: block; width: {width}px; height: {height}px; }}</style>
</head>
<body>
<img src="images/{image}" alt="{alt}"/>
</body>
</html>
"""

NAV = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" \
xml:lang="{lang}" lang="{lang}">
<head>
<meta charset="UTF-8"/>
<title>{title}</title>
</head>
<body>
<nav epub:type="toc" id="toc">
<h1>{title}</h1>
<ol>
{items}
</ol>
</nav>
</body>
</html>
"""

PACKAGE = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="book-id" xml:lang="{lang}" \
prefix="rendition: http://www.idpf.org/vocab/rendition/#">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:identifier id="book-id">urn:uuid:{uuid}</dc:identifier>
<dc:title>{title}</dc:title>
<dc:language>{lang}</dc:language>
<dc:creator>Mangaka</dc:creator>
<meta property="dcterms:modified">{modified}</meta>
<meta property="rendition:layout">pre-paginated</meta>
<meta property="rendition:orientation">auto</meta>
<meta property="rendition:spread">none</meta>
<meta name="cover" content="image-1"/>
</metadata>
<manifest>
<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
{manifest}
</manifest>
<spine page-progression-direction="{direction}">
{spine}
</spine>
</package>
"""


def _label(text: str, fallback: str) -> str:
    """``text`` escaped for XML, or ``fallback`` when it is blank: EPUB wants text in the title, the
    navigation document's heading and each of its links (the text itself is made legal for XML
    when the book's facts are made, in ``pages``)."""
    return escape(text if text.strip() else fallback)


def _book_id(pages: Sequence[Page], info: BookInfo) -> uuid.UUID:
    digest = hashlib.sha256(info.title.encode("utf-8"))
    for page in pages:
        digest.update(hashlib.sha256(page.data).digest())
    return uuid.UUID(bytes=digest.digest()[:16], version=5)


def _modified() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def package_document(sections: Sequence[Section], info: BookInfo) -> str:
    pages = [page for section in sections for page in section.pages]
    manifest, spine = [], []
    for i, page in enumerate(pages, 1):
        cover = ' properties="cover-image"' if i == 1 else ""
        manifest.append(
            f'<item id="image-{i}" href="images/{i:04d}{page.suffix}" media-type="{page.media_type}"{cover}/>'
        )
        manifest.append(f'<item id="page-{i}" href="page-{i:04d}.xhtml" media-type="application/xhtml+xml"/>')
        spine.append(f'<itemref idref="page-{i}"/>')
    return PACKAGE.format(
        lang=escape(info.language),
        uuid=_book_id(pages, info),
        title=_label(info.title, UNTITLED),
        modified=_modified(),
        manifest="\n".join(manifest),
        direction="rtl" if info.rtl else "ltr",
        spine="\n".join(spine),
    )


def navigation(sections: Sequence[Section], info: BookInfo) -> str:
    items, first = [], 1
    for n, section in enumerate(sections, 1):
        label = _label(section.title, f"Chapter {section.number or n}")
        items.append(f'<li><a href="page-{first:04d}.xhtml">{label}</a></li>')
        first += len(section.pages)
    return NAV.format(lang=escape(info.language), title=_label(info.title, UNTITLED), items="\n".join(items))


def write_epub(path: Path, sections: Sequence[Section], info: BookInfo) -> None:
    pages = [page for section in sections for page in section.pages]
    with atomic_output(path) as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as book:
        # The mimetype comes first and uncompressed, so a reader can recognise the file by its bytes.
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", CONTAINER)
        book.writestr("OEBPS/content.opf", package_document(sections, info))
        book.writestr("OEBPS/nav.xhtml", navigation(sections, info))
        for i, page in enumerate(pages, 1):
            image = f"{i:04d}{page.suffix}"
            book.writestr(f"OEBPS/images/{image}", page.data, compress_type=zipfile.ZIP_STORED)
            book.writestr(f"OEBPS/page-{i:04d}.xhtml", PAGE.format(
                lang=escape(info.language), title=escape(f"{info.title} {i}"), width=page.width,
                height=page.height, image=image, alt=escape(f"Page {i}"),
            ))  # fmt: skip
