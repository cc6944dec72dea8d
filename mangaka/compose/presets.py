"""Style presets and the camera/emotion vocabulary: data files under ``prompts/``.

- ``prompts/styles/<name>.json``: ``label``, ``description``, and for each output mode
  (``tags``, ``natural``) the positive and negative fragments of the style; ``balloon_room``: the
  words that ask the image for empty space where balloons will go (added to panels with lines),
  and whether the style asks by default (off for shoujo, whose backgrounds are busy by design, and
  for webtoon, whose balloons usually sit between panels).
- ``prompts/compose/terms.json``: shot type → camera terms, camera angle → angle terms, emotion
  → expression terms, and how many people are shown → count tags, each for both modes.

A test checks that every shot, angle and emotion of the screenplay contract has its terms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from ..errors import InputError, MangakaError
from ..prompts import PROMPTS_DIR

Mode = Literal["tags", "natural"]
MODES: tuple[str, ...] = ("tags", "natural")
STYLES_DIR = PROMPTS_DIR / "styles"
TERMS_FILE = PROMPTS_DIR / "compose" / "terms.json"


@dataclass(frozen=True)
class Style:
    name: str
    label: str
    description: str
    positive_tags: tuple[str, ...]
    negative_tags: tuple[str, ...]
    positive_natural: str
    negative_natural: str
    room_default: bool = False
    room_tags: tuple[str, ...] = ()
    room_natural: str = ""

    def positive(self, mode: str) -> list[str]:
        return list(self.positive_tags) if mode == "tags" else [self.positive_natural]

    def negative(self, mode: str) -> str:
        return ", ".join(self.negative_tags) if mode == "tags" else self.negative_natural


def style_names() -> list[str]:
    """The presets in ``prompts/styles``, sorted."""
    return sorted(p.stem for p in STYLES_DIR.glob("*.json"))


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InputError(f"prompt mode {mode!r} is not one of: {', '.join(MODES)}")


@cache
def load_style(name: str) -> Style:
    """Style preset ``name``; ``InputError`` lists the presets that exist."""
    names = style_names()
    if name not in names:
        raise InputError(f"style preset {name!r} does not exist; choose one of: {', '.join(names)}")
    path = STYLES_DIR / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Style(
            name=name,
            label=str(data["label"]),
            description=str(data.get("description", "")),
            positive_tags=tuple(data["tags"]["positive"]),
            negative_tags=tuple(data["tags"]["negative"]),
            positive_natural=str(data["natural"]["positive"]),
            negative_natural=str(data["natural"]["negative"]),
            room_default=bool(data["balloon_room"]["default"]),
            room_tags=tuple(data["balloon_room"]["tags"]),
            room_natural=str(data["balloon_room"]["natural"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MangakaError(f"style preset file {path} is broken ({exc!r}); reinstall the pack") from None


@cache
def terms() -> dict[str, dict[str, dict[str, Any]]]:
    """``terms()[section][key][mode]``; sections ``shot``, ``angle``, ``emotion``, ``count``."""
    try:
        return json.loads(TERMS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MangakaError(f"{TERMS_FILE} is broken ({exc!r}); reinstall the pack") from None


def term_tags(section: str, key: str) -> list[str]:
    return list(terms()[section][key]["tags"])


def term_natural(section: str, key: str) -> str:
    return str(terms()[section][key]["natural"])
