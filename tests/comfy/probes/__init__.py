"""A test-only ComfyUI pack (linked into the comfy tier's servers as ``mangaka-test-probes``).

``MangakaTestTagPanels`` takes every panel image of a run at once (a list, as SD Prompts' lists
through a sampler give them) with their panel ids, tints the k-th image with colour k
(``tag_colour``), and hands both lists on, in order or reversed (images arriving out of order,
as another graph might deliver them). A test then reads off a composed page which image landed
in which frame. It is a probe for the tests, never shipped: the random-weight test checkpoint
draws near-uniform grey, so without a tag every panel would look alike.
"""

from __future__ import annotations

import colorsys

TINT = 0.75  # the tag's share of each pixel; the sampler's image keeps the rest


def tag_colour(index: int) -> tuple[int, int, int]:
    """A saturated colour for the ``index``-th image (hues spread by the golden ratio)."""
    red, green, blue = colorsys.hsv_to_rgb((index * 0.618034) % 1.0, 0.9, 0.95)
    return round(red * 255), round(green * 255), round(blue * 255)


class TagPanels:
    CATEGORY = "testing"
    INPUT_IS_LIST = True
    RETURN_TYPES = ("IMAGE", "STRING")
    RETURN_NAMES = ("images", "panel_ids")
    OUTPUT_IS_LIST = (True, True)
    FUNCTION = "tag"

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "images": ("IMAGE",),
                "panel_ids": ("STRING", {"forceInput": True}),
                "order": (["keep", "reverse"],),
            }
        }

    def tag(self, images, panel_ids, order):
        import torch

        if len(images) != len(panel_ids):
            raise ValueError(f"{len(images)} images but {len(panel_ids)} panel ids")
        tagged = []
        for k, image in enumerate(images):
            colour = torch.tensor(tag_colour(k), dtype=image.dtype) / 255.0
            tagged.append(image * (1.0 - TINT) + colour * TINT)
        ids = list(panel_ids)
        if order[0] == "reverse":
            tagged.reverse()
            ids.reverse()
        return (tagged, ids)


NODE_CLASS_MAPPINGS = {"MangakaTestTagPanels": TagPanels}
NODE_DISPLAY_NAME_MAPPINGS = {"MangakaTestTagPanels": "Tag panels (test probe)"}
