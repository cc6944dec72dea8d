"""What several unit tests share: every path into a JSON value, the smallest gold chapter, a
three-paragraph chapter with its cast and a grounded script reply for it, and the tools that open
an export (epubcheck, qpdf, pdfinfo, pdfimages)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mangaka.screenplay import Character

EPUBCHECK = Path("/usr/share/java/epubcheck.jar")


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


# Three paragraphs (units 1-3), three quotes: one attributed ("…," said Mei), two in the last unit.
EN = (
    "Mei pushed open the door of the tea shop. Akira followed her in, shaking his umbrella.\n\n"
    '"We are closed," said Mei, though the sign still read open.\n\n'
    'Akira laughed. "One cup, then I will go." Mei only sighed. "Only one."'
)
ZH = (
    "小梅推开了茶馆的门，阿明跟在后面。\n\n"
    "小梅说：“我们打烊了。”\n\n"
    "阿明笑了：“就一杯，喝完我就走。”小梅叹了口气：“只有一杯。”"
)


def grounded_script(starts: list[int], quotes: list[int], captions: list[str]) -> dict[str, Any]:
    """A grounded script reply for ``EN``: panels starting at ``starts`` (each showing Mei), the
    quoted lines ``quotes`` (line 1 Mei's, the others Akira's), a caption in each panel of ``captions``."""
    return {
        "title": "Closing Time",
        "panels": [
            {
                "id": f"p{j}",
                "from": start,
                "shot": "medium",
                "angle": "eye_level",
                "characters": ["mei"],
                "action": f"action {j}",
                "expression": "",
                "background": "tea shop",
                "lighting": "",
                "props": [],
            }
            for j, start in enumerate(starts, 1)
        ],
        "dialogue": [
            {"quote": n, "speaker": "akira" if n > 1 else "mei", "emotion": "neutral"} for n in quotes
        ],
        "captions": [{"line": f"Caption in {p}.", "panel": p} for p in captions],
    }


CAST = [
    Character(id="mei", name="Mei", appearance="girl"),
    Character(id="akira", name="Akira", appearance="boy"),
]


def need(tool: str) -> list[str]:
    """The command line of a checking tool, or a skip (a failure where CI requires the tools)."""
    if tool == "epubcheck":
        found = EPUBCHECK.is_file() and shutil.which("java")
        command = ["java", "-jar", str(EPUBCHECK)]
    else:
        found = shutil.which(tool)
        command = [tool]
    if not found:
        message = f"{tool} is not installed (apt-get install epubcheck qpdf poppler-utils)"
        if os.environ.get("MANGAKA_REQUIRE_EXPORT_TOOLS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return command


def run(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout
