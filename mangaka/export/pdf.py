"""PDF through fpdf2 (pure Python, so it installs wherever the pack does, LoongArch included).

Each page is one image at its physical size: ``pixels / dpi`` inches (an A4 page of 2480 x 3508
pixels at 300 dpi is 210 x 297 mm). fpdf2 embeds a PNG losslessly (its pixels, Flate-compressed)
and a JPEG as its own bytes. Each chapter starts a bookmark (the PDF's outline). A right-to-left
book says so in its viewer preferences (``/Direction /R2L``), so a viewer shows facing pages right
to left: fpdf2 2.8 writes that entry as a bare ``RTL``, which is not a PDF name, so the pack writes
it itself (``_Preferences``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..fileio import atomic_output
from . import BookInfo, Section

POINTS_PER_INCH = 72


def _preferences(rtl: bool) -> Any:
    from fpdf.prefs import ViewerPreferences

    class _Preferences(ViewerPreferences):
        def serialize(self, *args: Any, **kwargs: Any) -> str:
            text = super().serialize(*args, **kwargs)
            return text.replace("<<", "<</Direction /R2L\n", 1) if rtl else text

    return _Preferences(display_doc_title=True)


def write_pdf(path: Path, sections: Sequence[Section], info: BookInfo) -> None:
    from fpdf import FPDF

    pdf = FPDF(unit="pt")
    pdf.set_auto_page_break(False)
    pdf.set_margins(0, 0, 0)
    pdf.set_title(info.title)
    pdf.set_lang(info.language)
    pdf.set_creator("Mangaka")
    pdf.viewer_preferences = _preferences(info.rtl)
    for section in sections:
        for i, page in enumerate(section.pages):
            width = page.width / page.dpi * POINTS_PER_INCH
            height = page.height / page.dpi * POINTS_PER_INCH
            pdf.add_page(format=(width, height))
            if i == 0:
                pdf.start_section(section.title)
            pdf.image(io.BytesIO(page.data), x=0, y=0, w=width, h=height)
    with atomic_output(path) as fh:
        fh.write(pdf.output())
