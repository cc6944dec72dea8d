"""What several unit tests share: every path into a JSON value, and the smallest gold chapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def json_paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into ``value`` (keys and indexes), the empty path first."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += json_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += json_paths(v, (*path, i))
    return out


def write_two_character_scene(folder: Path, cid: str = "scene") -> None:
    """A chapter of two characters and two quotes, the smallest kind of gold chapter, with no
    reference screenplay."""
    text = '"Is the ferry late?" Mara asked.\n\nTomas checked the harbour clock. "Never."\n'
    gold = {
        "version": 1, "id": cid, "language": "en", "title": "The Ferry",
        "characters": [
            {"id": "mara", "name": "Mara", "aliases": []},
            {"id": "tomas", "name": "Tomas", "aliases": []},
        ],
        "quotes": [{"text": "Is the ferry late?", "speaker": "mara"}, {"text": "Never.", "speaker": "tomas"}],
        "beats": [{"text": "Tomas says the ferry is never late.", "keywords": ["ferry", "clock"]}],
    }  # fmt: skip
    (folder / f"{cid}.txt").write_text(text, encoding="utf-8")
    (folder / f"{cid}.gold.json").write_text(json.dumps(gold), encoding="utf-8")
