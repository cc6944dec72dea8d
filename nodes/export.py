"""Save Manga: the pages as CBZ, EPUB and PDF files in ComfyUI's output folder."""

from __future__ import annotations

from pathlib import Path

import folder_paths
from comfy_api.latest import io

from ..mangaka.errors import InputError
from ..mangaka.export import (
    FORMATS,
    MAX_DPI,
    MIN_DPI,
    BookInfo,
    Section,
    check_name,
    export,
    image_page,
)
from ..mangaka.page.options import PAGE_OPTIONS
from ._comfy import widget
from .compose import screenplay_inputs
from .page import _to_pil

NODE = "Save Manga"


def _free_stem(prefix: str, formats: tuple[str, ...]) -> tuple[Path, str]:
    """The folder and a ``<name>_NNNNN`` stem that no file of any of ``formats`` has yet."""
    out = Path(folder_paths.get_output_directory()).resolve()
    target = (out / prefix).resolve()
    if out not in target.parents:
        raise InputError(f"{NODE}: filename_prefix {prefix!r} points outside ComfyUI's output folder")
    name = check_name(target.name, f"{NODE}: filename_prefix's last part")
    numbers = [
        int(p.stem[len(name) + 1 :])
        for fmt in formats
        for p in target.parent.glob(f"{name}_*.{fmt}")
        if p.stem[len(name) + 1 :].isdigit()
    ]
    return target.parent, f"{name}_{1 + max(numbers, default=0):05d}"


class SaveManga(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaSaveManga",
            display_name=NODE,
            category="Mangaka",
            description="Save the pages as files a reader opens: CBZ (with ComicInfo.xml) for comic "
            "readers, fixed-layout EPUB for e-readers, PDF for print. Right-to-left pages are marked as "
            "manga in each; a webtoon strip is cut at its gutters into pages.",
            inputs=[
                io.Image.Input("pages", tooltip="Compose Page's pages, in reading order"),
                *screenplay_inputs(),
                io.String.Input("filename_prefix", default="mangaka/manga"),
                io.Boolean.Input("cbz", default=True, tooltip="Comic readers (Komga, Kavita, KOReader)"),
                io.Boolean.Input("epub", default=True, tooltip="E-readers and stores (fixed layout)"),
                io.Boolean.Input("pdf", default=True, tooltip="Print and review, at the page's size"),
                widget(PAGE_OPTIONS["direction"]),  # as on Compose Page
                io.Int.Input(
                    "dpi", default=300, min=MIN_DPI, max=MAX_DPI, tooltip="The pages' print resolution"
                ),
                io.String.Input("title", default="", tooltip="The book's title; empty: the screenplay's"),
            ],
            outputs=[io.String.Output(display_name="paths")],
            is_output_node=True,
        )

    @classmethod
    def validate_inputs(cls, filename_prefix: str | None = None, **_kw) -> bool | str:
        if filename_prefix is not None and (not filename_prefix.strip() or ".." in filename_prefix):
            return f"{NODE}: filename_prefix must be a relative name like mangaka/manga (no '..')"
        return True

    @classmethod
    def execute(
        cls,
        pages,
        filename_prefix: str,
        cbz: bool,
        epub: bool,
        pdf: bool,
        direction: str,
        dpi: int,
        title: str = "",
        screenplay: dict | None = None,
        json_text: str | None = None,
    ) -> io.NodeOutput:
        from .compose import read_screenplay

        formats = tuple(f for f, on in zip(FORMATS, (cbz, epub, pdf), strict=True) if on)
        if not formats:
            raise InputError(f"{NODE}: turn on at least one of cbz, epub, pdf")
        parsed = None
        if screenplay is not None or (json_text and json_text.strip()):
            parsed = read_screenplay(screenplay, json_text, NODE)
        folder, stem = _free_stem(filename_prefix, formats)
        name = title.strip() or (parsed.title if parsed else stem)
        images = _to_pil([pages])
        section = Section(name, tuple(image_page(im, dpi, f"page {i}") for i, im in enumerate(images, 1)))
        cast = tuple(c.name for c in parsed.characters if c.id != "narrator") if parsed else ()
        info = BookInfo(name, parsed.language if parsed else "en", direction, characters=cast)
        try:
            written = export([section], info, formats, folder, stem)
        except InputError as exc:
            raise InputError(f"{NODE}: {exc}") from None
        out = Path(folder_paths.get_output_directory()).resolve()
        items = [
            {"filename": p.name, "subfolder": p.parent.relative_to(out).as_posix(), "type": "output"}
            for p in written
        ]
        shown = [f"saved {p.name}" for p in written]
        return io.NodeOutput("\n".join(str(p) for p in written), ui={"text": shown, "files": items})


NODES = [SaveManga]
