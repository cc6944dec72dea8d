"""A test-only ComfyUI pack (linked into the comfy tier's servers as ``mangaka-test-probes``).

``MangakaTestTagPanels`` takes every panel image of a run at once (a list, as SD Prompts' lists
through a sampler give them) with their panel ids, tints the k-th image with colour k
(``tag_colour``), and hands both lists on, in order or reversed (images arriving out of order,
as another graph might deliver them). A test then reads off a composed page which image landed
in which frame. It is a probe for the tests, never shipped: the random-weight test checkpoint
draws near-uniform grey, so without a tag every panel would look alike.

``MangakaTestTone`` is a fake text-to-speech node: a sine tone 0.5 s + 0.04 s per character of
its ``text`` long, a stand-in for a real TTS node (no speech model runs in the tests). Fed Voice
Script's ``texts`` list it runs once per line, as a TTS node would. ``MangakaTestToneBatch``
gives ``count`` such tones as one AUDIO batch (more or fewer clips than a screenplay's lines).
"""

from __future__ import annotations

import colorsys
import itertools
import math

TINT = 0.75  # the tag's share of each pixel; the sampler's image keeps the rest
TONE_RATE = 22050  # the fake TTS's sample rate (the motion comic resamples to 48 kHz)
TONE_BASE, TONE_PER_CHAR = 0.5, 0.04  # seconds of tone: the base and each character of the text
TONE_LEVEL = 0.5  # the tone's peak
_pitches = itertools.count()  # each call of the fake TTS a different pitch


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


def tone_seconds(text: str) -> float:
    """How long the fake TTS speaks ``text``: 0.5 s + 0.04 s per character."""
    return TONE_BASE + TONE_PER_CHAR * len(text)


def _tone(seconds: float) -> object:
    """A sine tone of ``seconds`` at the next pitch, as a float32 tensor shaped [N]."""
    import torch

    hertz = 220.0 * 2 ** ((next(_pitches) % 12) / 12)
    samples = torch.arange(round(seconds * TONE_RATE), dtype=torch.float32)
    return TONE_LEVEL * torch.sin(2 * math.pi * hertz * samples / TONE_RATE)


class Tone:
    """A fake TTS node: a tone as long as the text would take to speak, in place of a real TTS
    node (a speech model cannot run in the tests). ComfyUI runs it once per item of a list."""

    CATEGORY = "testing"
    RETURN_TYPES = ("AUDIO",)
    RETURN_NAMES = ("audio",)
    FUNCTION = "speak"

    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"text": ("STRING", {"forceInput": True})}}

    def speak(self, text):
        return ({"waveform": _tone(tone_seconds(text)).reshape(1, 1, -1), "sample_rate": TONE_RATE},)


class ToneBatch(Tone):
    """``count`` one-second tones as one AUDIO batch [count, 1, N] (a fake TTS's batch output)."""

    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"count": ("INT", {"default": 1, "min": 1, "max": 64})}}

    def speak(self, count):
        import torch

        waves = torch.stack([_tone(1.0) for _ in range(count)]).unsqueeze(1)
        return ({"waveform": waves, "sample_rate": TONE_RATE},)


NODE_CLASS_MAPPINGS = {
    "MangakaTestTagPanels": TagPanels,
    "MangakaTestTone": Tone,
    "MangakaTestToneBatch": ToneBatch,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "MangakaTestTagPanels": "Tag panels (test probe)",
    "MangakaTestTone": "Tone TTS (test probe)",
    "MangakaTestToneBatch": "Tone batch (test probe)",
}
