"""PDF: one page per image at its physical size, the images' own compressed bytes inside.

Each page is ``pixels / dpi`` inches (an A4 page of 2480 x 3508 pixels at 300 dpi is 595.2 x
841.92 points, 210 x 297 mm), filled by its image. A JPEG goes in as its own bytes (``DCTDecode``);
an 8-bit opaque PNG goes in as its own zlib stream (``FlateDecode`` with the PNG predictors, which
PDF shares with PNG), so nothing is decoded or compressed again and the page is exactly the file.
Any other PNG (alpha, a palette, 16 bits, interlaced) is decoded and stored as Flate-compressed RGB
or grey (alpha over white). Each chapter gets a bookmark; a right-to-left book says so in its
viewer preferences (``/Direction /R2L``), so viewers lay facing pages out right to left.

Written by hand rather than through a PDF library: fpdf2 (pure Python) decodes every PNG and
compresses it again, which took 22.7 s and 140 MiB for a 20-page A4 chapter whose PNGs are 85 MiB
(this writer: the PNG's size, in well under a second; ``bench --only export``); img2pdf, which
passes PNG data through as this does, needs pikepdf, a compiled library without LoongArch wheels.
The file is checked in the tests with qpdf, pdfinfo and pdfimages.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError
from ..fileio import atomic_output
from .pages import BookInfo, Page, Section

POINTS_PER_INCH = 72
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class _Image:
    """An image XObject's dictionary entries (without /Length) and its stream."""

    entries: str
    data: bytes


def _text(value: str) -> str:
    """A PDF text string: UTF-16BE with its byte-order mark, as hex (any script, emoji as surrogate
    pairs, nothing to escape). ``value`` holds no lone surrogate: ``BookInfo`` and ``Section`` made
    it legal (``xmltext``)."""
    return "<FEFF" + value.encode("utf-16-be").hex().upper() + ">"


def _png_passthrough(data: bytes) -> _Image | None:
    """An 8-bit, non-interlaced, opaque grey or RGB PNG as its own zlib stream; None otherwise."""
    if not data.startswith(_PNG_SIGNATURE):
        return None
    pos, idat, header = len(_PNG_SIGNATURE), [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"tRNS":
            return None  # transparency: decoded instead
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None or not idat:
        return None
    width, height, depth, colour, _, _, interlace = header
    colours = {0: 1, 2: 3}.get(colour)
    if depth != 8 or interlace != 0 or colours is None:
        return None
    space = "/DeviceGray" if colours == 1 else "/DeviceRGB"
    entries = (
        f"/Width {width} /Height {height} /ColorSpace {space} /BitsPerComponent 8 /Filter /FlateDecode "
        f"/DecodeParms << /Predictor 15 /Colors {colours} /BitsPerComponent 8 /Columns {width} >>"
    )
    return _Image(entries, b"".join(idat))


def _decoded(data: bytes) -> _Image:
    """Any image Pillow reads, as Flate-compressed RGB or grey (alpha composited over white)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image.load()
        if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
            rgba = image.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            image = flat
        elif image.mode not in ("L", "RGB"):
            image = image.convert("RGB")
        space = "/DeviceGray" if image.mode == "L" else "/DeviceRGB"
        entries = (
            f"/Width {image.width} /Height {image.height} /ColorSpace {space} /BitsPerComponent 8 "
            "/Filter /FlateDecode"
        )
        return _Image(entries, zlib.compress(image.tobytes(), 6))


def _image(page: Page) -> _Image:
    from PIL import UnidentifiedImageError

    try:
        return _embedded(page)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise InputError(f"{page.source} is not a readable image ({exc}); write the page again") from None


def _embedded(page: Page) -> _Image:
    if page.kind == "jpeg":
        from PIL import Image

        with Image.open(io.BytesIO(page.data)) as image:
            mode = image.mode
        if mode in ("RGB", "L"):
            space = "/DeviceGray" if mode == "L" else "/DeviceRGB"
            entries = f"/Width {page.width} /Height {page.height} /ColorSpace {space} /BitsPerComponent 8"
            return _Image(entries + " /Filter /DCTDecode", page.data)
    return _png_passthrough(page.data) or _decoded(page.data)


class _Writer:
    """Objects written one after the other, with their offsets for the cross-reference table."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.offsets: dict[int, int] = {}
        self.written = 0
        self._emit(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")

    def _emit(self, raw: bytes) -> None:
        self.out.write(raw)
        self.written += len(raw)

    def obj(self, number: int, body: str, stream: bytes | None = None) -> None:
        self.offsets[number] = self.written
        if stream is None:
            self._emit(f"{number} 0 obj\n{body}\nendobj\n".encode("ascii"))
            return
        self._emit(f"{number} 0 obj\n<< {body} /Length {len(stream)} >>\nstream\n".encode("ascii"))
        self._emit(stream)
        self._emit(b"\nendstream\nendobj\n")

    def finish(self, root: int, info: int, file_id: str) -> None:
        start = self.written
        size = max(self.offsets) + 1
        rows = ["xref", f"0 {size}", "0000000000 65535 f "]
        rows += [
            f"{self.offsets[n]:010d} 00000 n " if n in self.offsets else "0000000000 65535 f "
            for n in range(1, size)
        ]
        trailer = (
            f"trailer\n<< /Size {size} /Root {root} 0 R /Info {info} 0 R /ID [<{file_id}> <{file_id}>] >>"
        )
        self._emit(("\n".join(rows) + f"\n{trailer}\nstartxref\n{start}\n%%EOF\n").encode("ascii"))


def _outline(w: _Writer, sections: Sequence[Section], first_pages: list[int], first_number: int) -> int:
    """Bookmarks, one per chapter, each opening its first page; the outline's object number."""
    root, items = first_number, list(range(first_number + 1, first_number + 1 + len(sections)))
    for i, (section, number) in enumerate(zip(sections, items, strict=True)):
        links = f"/Parent {root} 0 R"
        if i > 0:
            links += f" /Prev {items[i - 1]} 0 R"
        if i + 1 < len(items):
            links += f" /Next {items[i + 1]} 0 R"
        w.obj(number, f"<< /Title {_text(section.title)} {links} /Dest [{first_pages[i]} 0 R /Fit] >>")
    w.obj(root, f"<< /Type /Outlines /First {items[0]} 0 R /Last {items[-1]} 0 R /Count {len(items)} >>")
    return root


def write_pdf(path: Path, sections: Sequence[Section], info: BookInfo) -> None:
    pages = [page for section in sections for page in section.pages]
    # Numbers: 1 catalog, 2 page tree, 3 info, then 3 per page (page, contents, image), then outline.
    page_numbers = [4 + 3 * i for i in range(len(pages))]
    digest = hashlib.sha256(info.title.encode("utf-8"))
    with atomic_output(path) as fh:
        w = _Writer(fh)
        for page, number in zip(pages, page_numbers, strict=True):
            width = page.width / page.dpi * POINTS_PER_INCH
            height = page.height / page.dpi * POINTS_PER_INCH
            image = _image(page)
            digest.update(hashlib.sha256(image.data).digest())
            w.obj(number + 2, f"/Type /XObject /Subtype /Image {image.entries}", image.data)
            draw = f"q {width:.4f} 0 0 {height:.4f} 0 0 cm /Im0 Do Q".encode("ascii")
            w.obj(number + 1, "", draw)
            w.obj(
                number,
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width:.4f} {height:.4f}] "
                f"/Resources << /XObject << /Im0 {number + 2} 0 R >> >> /Contents {number + 1} 0 R >>",
            )
        firsts, at = [], 0
        for section in sections:
            firsts.append(page_numbers[at])
            at += len(section.pages)
        outline = _outline(w, sections, firsts, 4 + 3 * len(pages))
        kids = " ".join(f"{n} 0 R" for n in page_numbers)
        w.obj(2, f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>")
        w.obj(3, f"<< /Title {_text(info.title)} /Producer (Mangaka) /Creator (Mangaka) >>")
        direction = " /Direction /R2L" if info.rtl else ""
        w.obj(
            1,
            f"<< /Type /Catalog /Pages 2 0 R /Outlines {outline} 0 R /PageMode /UseOutlines "
            f"/Lang {_text(info.language)} /ViewerPreferences << /DisplayDocTitle true{direction} >> >>",
        )
        w.finish(1, 3, digest.hexdigest()[:32].upper())
