"""API-format workflows for the queue: load, find the chapter input, check against a server."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fileio import parse_json, read_text

EXPORT_HINT = (
    "export the API format: in ComfyUI's menu Workflow → Export (API), or use the twins in "
    "example_workflows/api/"
)
# Node types whose string input takes a chapter, and which input.
CHAPTER_INPUTS = {"MangakaScreenwriter": "chapter"}
_TITLE = re.compile(r"chapter|章|話|话", re.IGNORECASE)


@dataclass(frozen=True)
class ChapterInput:
    node_id: str
    input: str

    def __str__(self) -> str:
        return f"{self.node_id}.{self.input}"


def load_workflow(path: str | Path) -> dict[str, Any]:
    """An API-format workflow (``{node_id: {"class_type", "inputs"}}``) from a JSON file."""
    path = Path(path)
    text = read_text(path, "workflow file")  # a regular UTF-8 file of bounded size, or InputError
    data = parse_json(text, f"workflow file {path}", EXPORT_HINT)
    if isinstance(data, dict) and "nodes" in data and "links" in data:
        raise InputError(f"{path} is a UI-format workflow (the graph the editor saves); {EXPORT_HINT}")
    if isinstance(data, dict) and isinstance(data.get("prompt"), dict):
        data = data["prompt"]  # a /prompt request body
    if (
        not isinstance(data, dict)
        or not data
        or not all(
            isinstance(node, dict) and "class_type" in node and isinstance(node.get("inputs"), dict)
            for node in data.values()
        )
    ):
        raise InputError(f"{path} is not an API-format ComfyUI workflow; {EXPORT_HINT}")
    return data


def find_chapter_input(prompt: dict[str, Any], spec: str | None = None) -> ChapterInput:
    """Where the chapter text goes: ``spec`` ("NODE_ID.INPUT"), else the one Screenwriter, else the
    one node whose title mentions a chapter. Ambiguity or absence is an error listing candidates."""
    if spec:
        node_id, _, name = spec.partition(".")
        node = prompt.get(node_id)
        if node is None or not name or name not in node["inputs"]:
            raise InputError(
                f"--chapter-input {spec!r}: no such node input; candidates: {_candidates(prompt)}"
            )
        return ChapterInput(node_id, name)
    found = [
        ChapterInput(node_id, CHAPTER_INPUTS[node["class_type"]])
        for node_id, node in prompt.items()
        if node["class_type"] in CHAPTER_INPUTS
        and isinstance(node["inputs"].get(CHAPTER_INPUTS[node["class_type"]]), str)
    ]
    if not found:
        found = [
            ChapterInput(node_id, name)
            for node_id, node in prompt.items()
            if _TITLE.search(str(node.get("_meta", {}).get("title", "")))
            for name, value in node["inputs"].items()
            if isinstance(value, str)
        ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(
            "the workflow has no chapter input (a Screenwriter node with its chapter typed in, or a text "
            "node titled 'chapter'); name one with --chapter-input NODE_ID.INPUT; candidates: "
            + _candidates(prompt)
        )
    listed = ", ".join(f"{c} ({prompt[c.node_id]['class_type']})" for c in found)
    raise InputError(f"the workflow has several chapter inputs: {listed}; pick one with --chapter-input")


def _candidates(prompt: dict[str, Any]) -> str:
    names = [
        f"{node_id}.{name} ({node['class_type']})"
        for node_id, node in prompt.items()
        for name, value in node["inputs"].items()
        if isinstance(value, str)
    ]
    return ", ".join(names[:20]) or "none"


def with_chapter(prompt: dict[str, Any], where: ChapterInput, text: str) -> dict[str, Any]:
    out = copy.deepcopy(prompt)
    out[where.node_id]["inputs"][where.input] = text
    return out


def _options(spec: Any) -> list[Any] | None:
    """The choices of a combo input in /object_info (V1: [[...], {...}]; V3: ["COMBO", {"options"}])."""
    if not isinstance(spec, list) or not spec:
        return None
    if isinstance(spec[0], list):
        return spec[0]
    if spec[0] == "COMBO" and len(spec) > 1 and isinstance(spec[1], dict):
        return spec[1].get("options")
    return None


def check_workflow(prompt: dict[str, Any], object_info: dict[str, Any], server: str) -> list[str]:
    """What would make ``server`` refuse the workflow: unknown node types, missing required
    inputs, combo values (model files) it does not have."""
    problems = []
    for node_id, node in prompt.items():
        kind = node["class_type"]
        info = object_info.get(kind)
        if info is None:
            problems.append(
                f"node {node_id}: {kind} is not installed on {server} (install its custom node pack)"
            )
            continue
        required = info.get("input", {}).get("required", {})
        optional = info.get("input", {}).get("optional", {})
        for name in required:
            if name not in node["inputs"]:
                problems.append(f"node {node_id} ({kind}): required input {name!r} is missing")
        for name, value in node["inputs"].items():
            choices = _options(required.get(name) or optional.get(name))
            if choices is not None and not isinstance(value, list) and value not in choices:
                shown = ", ".join(map(str, choices[:8])) or "nothing"
                problems.append(
                    f"node {node_id} ({kind}): {name} {value!r} is not on {server} (it has: {shown})"
                )
    return problems
