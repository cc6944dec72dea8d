"""CBZ: a ZIP of the page images in reading order, with ``ComicInfo.xml`` (the ComicRack metadata
that comic readers such as Komga, Kavita and KOReader read).

The images are stored (``ZIP_STORED``), never recompressed: PNG and JPEG are compressed already.
ComicInfo's elements are written in the order its schema (v2.0) lists them; ``Manga`` is
``YesAndRightToLeft`` for right-to-left pages, which tells a reader to turn pages leftwards.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree as ET

from ..fileio import atomic_output
from .pages import BookInfo, Page, Section

COMIC_INFO = "ComicInfo.xml"


def page_names(pages: Sequence[Page]) -> list[str]:
    """``001.png`` … zero-padded so that name order is reading order in every reader."""
    width = max(3, len(str(len(pages))))
    return [f"{i:0{width}d}{page.suffix}" for i, page in enumerate(pages, 1)]


def comic_info(pages: Sequence[Page], info: BookInfo) -> bytes:
    root = ET.Element("ComicInfo", {
        "xmlns:xsd": "http://www.w3.org/2001/XMLSchema",
        "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
    })  # fmt: skip

    def add(tag: str, text: object) -> None:
        ET.SubElement(root, tag).text = str(text)

    add("Title", info.title)
    if info.series:
        add("Series", info.series)
    if info.number is not None:
        add("Number", info.number)
    add("PageCount", len(pages))
    add("LanguageISO", info.language)
    add("Manga", "YesAndRightToLeft" if info.rtl else "No")
    if info.characters:
        add("Characters", ", ".join(info.characters))
    listing = ET.SubElement(root, "Pages")
    for i, page in enumerate(pages):
        attrs = {"Image": str(i), "ImageSize": str(len(page.data))}
        if i == 0:
            attrs["Type"] = "FrontCover"
        attrs |= {"ImageWidth": str(page.width), "ImageHeight": str(page.height)}
        ET.SubElement(listing, "Page", attrs)
    ET.indent(root)
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="utf-8") + b"\n"


def _entry(name: str) -> zipfile.ZipInfo:
    """A member with a fixed date (the same pages give the same file) and read permission."""
    entry = zipfile.ZipInfo(name, date_time=(2000, 1, 1, 0, 0, 0))
    entry.external_attr = 0o644 << 16
    return entry


def write_cbz(path: Path, sections: Sequence[Section], info: BookInfo) -> None:
    pages = [page for section in sections for page in section.pages]
    with atomic_output(path) as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as archive:
        for name, page in zip(page_names(pages), pages, strict=True):
            archive.writestr(_entry(name), page.data)
        archive.writestr(_entry(COMIC_INFO), comic_info(pages, info), compress_type=zipfile.ZIP_DEFLATED)
