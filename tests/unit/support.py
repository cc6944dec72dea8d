"""What several unit tests share: every path into a JSON value, the smallest gold chapter, a
three-paragraph chapter with its cast and a grounded script reply for it, a fake LLM that answers
each call from its schema (``SchemaLLM``, ``cast_reply``, ``script_reply``), and the tools that
open an export (epubcheck, qpdf, pdfinfo, pdfimages)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mangaka.screenplay import Character
from tests.fakes import FakeScriptedLLM

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


class SchemaLLM(FakeScriptedLLM):
    """``FakeScriptedLLM`` whose replies may be functions of the call's schema."""

    def complete(self, messages: Any, *, schema: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        if self.replies and callable(self.replies[0]):
            self.replies[0] = self.replies[0](schema)
        return super().complete(messages, schema=schema, **kwargs)


def cast_reply(schema: dict[str, Any]) -> dict[str, Any]:
    """A cast of the names the schema forces (their ids where it fixes them, else from the name), or
    one invented person."""
    array = schema["properties"]["characters"]
    people = []
    for i, item in enumerate(array.get("prefixItems", []), 1):
        name = item["properties"]["name"]["const"]
        cid = item["properties"]["id"].get("const") or (
            name.lower() if name.isascii() and name.isalpha() else f"c{i}"
        )
        people.append({"id": cid, "name": name, "appearance": f"look of {name}"})
    return {"characters": people or [{"id": "someone", "name": "Someone", "appearance": "a passer-by"}]}


def script_reply(
    schema: dict[str, Any], *, quotes: list[int] | None = None, caption_panels: list[str] | None = None
) -> dict[str, Any]:
    """A script reply the schema accepts: its panels with the starts it fixes, every quoted line it
    lists (or ``quotes`` when it lets the model choose), spoken by the likely speaker when it names
    one, and its captions (in ``caption_panels``, default the last panel)."""
    props, defs = schema["properties"], schema["$defs"]
    speakers = defs["speaker"]["enum"]
    panels = []
    for j, item in enumerate(props["panels"]["prefixItems"]):
        start = item["properties"]["from"].get("const")
        if start is None:  # an enum of the units: one panel a unit, in order
            units = defs["from"]["enum"]
            start = units[min(j, len(units) - 1)]
        pid = item["properties"]["id"]["const"]
        panels.append(
            {
                "id": pid,
                "from": start,
                "shot": "medium",
                "angle": "eye_level",
                "characters": [],
                "action": f"action of {pid}",
                "expression": "",
                "background": "tea shop",
                "lighting": "",
                "props": [],
            }
        )
    dialogue_schema = props["dialogue"]
    dialogue = []
    if "prefixItems" in dialogue_schema:
        for item in dialogue_schema["prefixItems"]:
            fixed = item["properties"]
            likely = fixed.get("likely", {}).get("const")
            speaker = fixed["speaker"].get("const") or likely or speakers[0]
            line = {"quote": fixed["quote"]["const"], "speaker": speaker, "emotion": "neutral"}
            dialogue.append({"quote": line["quote"], **({"likely": likely} if likely else {}), **line})
    else:
        dialogue = [{"quote": n, "speaker": speakers[0], "emotion": "neutral"} for n in quotes or []]
    count = props["captions"]["minItems"]
    where = caption_panels or [panels[-1]["id"]] * count
    captions = [{"line": f"Caption {k + 1}.", "panel": where[k]} for k in range(count)]
    title = props["title"].get("const", "Closing Time")
    return {"title": title, "panels": panels, "dialogue": dialogue, "captions": captions}
