"""Page nodes: Compose Page (panel images + screenplay → lettered pages) and Preview Layout."""

from __future__ import annotations

import json
import logging

from comfy_api.latest import io, ui

from ..mangaka.errors import InputError
from ..mangaka.options import widget_names
from ..mangaka.page.layout import (
    layout_pages,
    layout_to_dict,
)
from ..mangaka.page.options import LAYOUT_FIELDS, PAGE_OPTIONS, layout_from, lettering_from
from ..mangaka.page.render import compose_pages, group_by_chapter, preview_layout
from . import _comfy
from ._comfy import from_widgets, widget
from .compose import read_screenplay, screenplay_inputs

log = logging.getLogger("mangaka")

PAGE_WIDGETS = widget_names(PAGE_OPTIONS)  # an error's field → the widget that sets it


def _layout_inputs() -> list:
    """The layout's widgets, from their declarations (``mangaka/page/options.py``)."""
    return [widget(PAGE_OPTIONS[f]) for f in LAYOUT_FIELDS]


def _widget_fields(kw: dict) -> dict:
    """The page options the node was given, by field (each widget's one value under is_input_list)."""
    return from_widgets(PAGE_OPTIONS, {name: _one(value) for name, value in kw.items()})


def _to_tensor(pages):
    import numpy as np
    import torch

    return torch.stack([torch.from_numpy(np.asarray(p, dtype=np.float32) / 255.0) for p in pages])


def _to_pil(images) -> list:
    """ComfyUI IMAGE tensors (each [B, H, W, C], 0..1) → one PIL image per batch entry."""
    import numpy as np
    from PIL import Image

    out = []
    for batch in images:
        for frame in batch:
            array = (frame.detach().cpu().numpy() * 255.0).clip(0, 255).astype(np.uint8)
            out.append(Image.fromarray(array[..., :3] if array.shape[-1] >= 3 else array[..., 0]))
    return out


def _one(value):
    """A widget value under is_input_list: the first (and only) item."""
    return value[0] if isinstance(value, list) else value


class ComposePage(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaComposePage",
            display_name="Compose Page",
            category="Mangaka",
            description="Lay panel images out as manga pages in reading order and letter every dialogue line "
            "into a speech balloon (Chinese, Japanese, English; vertical text for zh/ja).",
            is_input_list=True,
            inputs=[
                io.Image.Input(
                    "images",
                    optional=True,
                    tooltip="Panel images: a batch or a list (one per panel). Not connected: each panel's "
                    "storyboard card, drawn whole for its frame",
                ),
                *screenplay_inputs(),
                io.String.Input(
                    "panel_ids",
                    optional=True,
                    force_input=True,
                    tooltip="SD Prompts' panel_ids: which panel each image is for (else by order)",
                ),
                io.Mask.Input(
                    "avoid",
                    optional=True,
                    tooltip="Where balloons must not go, per panel image (white: a face, the subject), e.g. "
                    "from a detector; same count and order as images",
                ),
                *_layout_inputs(),
                *(widget(PAGE_OPTIONS[f]) for f in ("lettering", "vertical", "font_size", "border")),
            ],
            outputs=[
                io.Image.Output(display_name="pages"),
                io.String.Output(display_name="layout_json"),
                io.String.Output(display_name="report"),
            ],
        )

    @classmethod
    def execute(cls, images=None, **kw) -> io.NodeOutput:
        screenplays = _screenplays(kw.get("screenplay"), kw.get("json_text"))
        cards = not images
        if cards:  # no images: every chapter's panels as storyboard cards fitted to their frames
            images = [None] * len(screenplays)
        fields = _widget_fields(kw)
        try:
            options = layout_from(fields)
            lettering_from(fields, "en")  # checked before any page is drawn
        except InputError as exc:
            raise InputError(f"Compose Page: {exc.renamed(PAGE_WIDGETS)}") from None
        try:
            indexes, chapter_ids = (
                ([[i] for i in range(len(images))], [None] * len(images))
                if cards
                else group_by_chapter(
                    [int(batch.shape[0]) for batch in images],
                    [len(parsed.panels) for parsed in screenplays],
                    kw.get("panel_ids") or None,
                )
            )
        except InputError as exc:
            raise InputError(f"Compose Page: {exc}") from None
        groups = [[images[i] for i in chapter] for chapter in indexes]
        avoid = _avoid_groups(kw.get("avoid"), images, indexes, cards)
        pages, layouts, reports = [], [], []
        progress = _comfy.progress()
        for i, (parsed, batch, panel_ids) in enumerate(zip(screenplays, groups, chapter_ids, strict=True)):
            lettering, drawing = lettering_from(fields, parsed.language)
            composed = compose_pages(
                parsed,
                [] if cards else _to_pil(batch),
                avoid=avoid[i],
                layout=options,
                lettering=lettering,
                **drawing,
                panel_ids=panel_ids,
                cards=cards,
            )
            pages += composed.pages
            layouts.append(composed.layout_json())
            reports.append(
                composed.report() if len(screenplays) == 1 else f"{parsed.title}: {composed.report()}"
            )
            progress(i + 1, len(screenplays))
        report = "\n".join(reports)
        layout = layouts[0] if len(layouts) == 1 else {"chapters": layouts}
        return io.NodeOutput(
            _to_tensor(pages), json.dumps(layout, indent=2), report, ui=ui.PreviewText(report)
        )


def _avoid_groups(avoid, images, indexes, cards: bool) -> list:
    """Compose Page's ``avoid`` masks as PIL "L" images, grouped as the images are (None: not given)."""
    if not avoid or cards:
        return [None] * len(indexes)
    from PIL import Image

    counts = [int(batch.shape[0]) for batch in images]
    masks = [int(m.shape[0]) if m.dim() == 3 else 1 for m in avoid]
    if masks != counts:
        raise InputError(
            f"Compose Page: avoid has {sum(masks)} masks in batches of {masks} but images has "
            f"{sum(counts)} in {counts}; give one mask per panel image, batched as the images are"
        )
    flat = []
    for batch in avoid:
        for frame in batch if batch.dim() == 3 else [batch]:
            array = (frame.detach().cpu().float().numpy() * 255.0).clip(0, 255).astype("uint8")
            flat.append(Image.fromarray(array))
    starts = [sum(counts[:i]) for i in range(len(counts))]
    return [[flat[starts[i] + k] for i in chapter for k in range(counts[i])] for chapter in indexes]


def _screenplays(screenplay, json_text) -> list:
    """Every screenplay given (a list under is_input_list: one per chapter in a book run)."""
    given = [s for s in (screenplay or []) if s is not None]
    if given:
        return [read_screenplay(s, None, "Compose Page") for s in given]
    texts = [t for t in (json_text or []) if t and t.strip()]
    if texts:
        return [read_screenplay(None, t, "Compose Page") for t in texts]
    return [read_screenplay(None, None, "Compose Page")]  # raises: connect one


class PreviewLayout(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaPreviewLayout",
            display_name="Preview Page Layout",
            category="Mangaka",
            description="The page layout as grey frames with panel ids, to tune it before generating images.",
            inputs=[
                *screenplay_inputs(),
                *_layout_inputs(),
            ],
            outputs=[io.Image.Output(display_name="pages"), io.String.Output(display_name="layout_json")],
        )

    @classmethod
    def execute(cls, screenplay: dict | None = None, json_text: str | None = None, **kw) -> io.NodeOutput:
        parsed = read_screenplay(screenplay, json_text, "Preview Page Layout")
        try:
            pages = layout_pages(parsed.panels, layout_from(_widget_fields(kw)))
        except InputError as exc:
            raise InputError(f"Preview Page Layout: {exc.renamed(PAGE_WIDGETS)}") from None
        return io.NodeOutput(_to_tensor(preview_layout(pages)), json.dumps(layout_to_dict(pages), indent=2))


NODES = [ComposePage, PreviewLayout]
