"""Page nodes: Compose Page (panel images + screenplay → lettered pages) and Preview Layout."""

from __future__ import annotations

import json
import logging

from comfy_api.latest import io, ui

from ..mangaka.errors import InputError
from ..mangaka.page.layout import (
    DIRECTIONS,
    MAX_PANELS_PER_PAGE,
    MAX_SIDE,
    PAGE_PRESETS,
    LayoutOptions,
    layout_pages,
    layout_to_dict,
    text_order,
)
from ..mangaka.page.lettering import LetteringOptions
from ..mangaka.page.render import compose_pages, group_by_chapter, preview_layout
from . import _comfy
from .compose import read_screenplay, screenplay_inputs

log = logging.getLogger("mangaka")

CUSTOM = "custom"


def _layout_inputs() -> list:
    return [
        io.Combo.Input("page", options=[*PAGE_PRESETS, CUSTOM], default="A4 300dpi"),
        io.Int.Input("width", default=2480, min=0, max=MAX_SIDE, tooltip="Custom page width in pixels"),
        io.Int.Input(
            "height", default=3508, min=0, max=MAX_SIDE, tooltip="Custom page height; 0 = follow the panels"
        ),
        io.Combo.Input(
            "direction",
            options=list(DIRECTIONS),
            default="rtl",
            tooltip="rtl: manga (right to left); ltr: comics; vertical: webtoon strip",
        ),
        io.Int.Input("panels_per_page", default=6, min=1, max=MAX_PANELS_PER_PAGE),
        io.Int.Input("margin", default=-1, min=-1, max=5000, tooltip="Pixels; -1 = 5% of the shorter side"),
        io.Int.Input("gutter", default=-1, min=-1, max=2000, tooltip="Pixels between panels; -1 = automatic"),
        io.Int.Input("bleed", default=0, min=0, max=2000, tooltip="Pixels added around the trim for print"),
        io.Boolean.Input("weighted", default=True, tooltip="Wide shots get more room than close-ups"),
    ]


def _layout_options(
    page, width, height, direction, panels_per_page, margin, gutter, bleed, weighted
) -> LayoutOptions:
    return LayoutOptions(
        page=page,
        width=width,
        height=height,
        direction=direction,
        panels_per_page=panels_per_page,
        margin=None if margin < 0 else margin,
        gutter=None if gutter < 0 else gutter,
        bleed=bleed,
        weighted=weighted,
    )


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
                io.Boolean.Input("lettering", default=True),
                io.Boolean.Input("vertical_text", default=False, tooltip="Chinese/Japanese top to bottom"),
                io.Int.Input(
                    "font_size", default=0, min=0, max=400, tooltip="Largest text size; 0 = automatic"
                ),
                io.Int.Input(
                    "border", default=-1, min=-1, max=100, tooltip="Frame line width; -1 = automatic"
                ),
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
        names = (
            "page",
            "width",
            "height",
            "direction",
            "panels_per_page",
            "margin",
            "gutter",
            "bleed",
            "weighted",
        )
        options = _layout_options(*(_one(kw[n]) for n in names))
        font_size = _one(kw["font_size"])
        border = _one(kw["border"])
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
            lettering = LetteringOptions(
                language=parsed.language,
                vertical=bool(_one(kw["vertical_text"])),
                direction=text_order(options.direction),
                max_font_size=font_size or None,
            )
            composed = compose_pages(
                parsed,
                [] if cards else _to_pil(batch),
                avoid=avoid[i],
                layout=options,
                lettering=lettering,
                letter=bool(_one(kw["lettering"])),
                border=None if border < 0 else border,
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
            pages = layout_pages(parsed.panels, _layout_options(**kw))
        except InputError as exc:
            raise InputError(f"Preview Page Layout: {exc}") from None
        return io.NodeOutput(_to_tensor(preview_layout(pages)), json.dumps(layout_to_dict(pages), indent=2))


NODES = [ComposePage, PreviewLayout]
