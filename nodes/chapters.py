"""Split Chapters: a whole book → one chapter per list item, so one queued run processes every chapter."""

from __future__ import annotations

import logging

from comfy_api.latest import io

from ..mangaka.batch.options import BOOK_OPTIONS
from ..mangaka.chapters import parse_range, split_chapters
from ..mangaka.errors import InputError
from ._comfy import widget

log = logging.getLogger("mangaka")


class SplitChapters(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaSplitChapters",
            display_name="Split Chapters",
            category="Mangaka",
            description="Split a whole book into chapters by its headings (第一章, 第1話, Chapter 1, "
            "Prologue, Markdown #…) and output them as lists, so one queued run turns every chapter into "
            "a screenplay.",
            inputs=[
                io.String.Input(
                    "book",
                    multiline=True,
                    default="",
                    placeholder="Paste the whole book (or several chapters)",
                ),
                widget(BOOK_OPTIONS["max_chars"]),
                widget(BOOK_OPTIONS["chapters"], optional=True),
            ],
            outputs=[
                io.String.Output(display_name="chapter_text", is_output_list=True),
                io.String.Output(display_name="titles", is_output_list=True),
                io.Int.Output(display_name="count"),
                io.Int.Output(
                    display_name="numbers",
                    is_output_list=True,
                    tooltip="Each chapter's number in the book, for Series Cast and the Screenwriter",
                ),
            ],
        )

    @classmethod
    def validate_inputs(
        cls, book: str | None = None, max_chars: int | None = None, chapters: str | None = None, **_kw
    ) -> bool | str:
        if book is not None and not book.strip():
            return "Split Chapters: the book is empty; paste the book text or connect a text node"
        if max_chars is not None:  # ComfyUI leaves the range to this method (it takes **_kw)
            try:
                BOOK_OPTIONS["max_chars"].check(max_chars)
            except InputError as exc:
                return f"Split Chapters: {exc}"
        if book is not None and chapters:
            # The range can only be checked against the book when the book is typed in, not linked.
            try:
                found = split_chapters(book, max_chars=max_chars or BOOK_OPTIONS["max_chars"].default)
                parse_range(chapters, len(found))
            except InputError as exc:
                return f"Split Chapters: {exc}"
        return True

    @classmethod
    def execute(cls, book: str, max_chars: int, chapters: str = "") -> io.NodeOutput:
        found = split_chapters(book, max_chars=max_chars)
        if not found:
            raise InputError("Split Chapters: the book is empty; paste the book text or connect a text node")
        try:
            numbers = parse_range(chapters or "", len(found))
        except InputError as exc:
            raise InputError(f"Split Chapters: {exc}") from None
        picked = [found[n - 1] for n in numbers]
        log.info(
            "Split Chapters: %d of %d chapters: %s",
            len(picked),
            len(found),
            ", ".join(c.title for c in picked[:8]) + (" …" if len(picked) > 8 else ""),
        )
        return io.NodeOutput(
            [c.text for c in picked], [c.title for c in picked], len(picked), [c.number for c in picked]
        )


NODES = [SplitChapters]
