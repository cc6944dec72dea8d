"""Find the screenplay JSON in text from any LLM node: code fences, ``<think>`` blocks and prose
around the JSON are taken off, then the JSON is validated like our own output.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import InputError
from ..screenplay.models import Screenplay
from ..screenplay.validate import load_screenplay

THINK_CLOSE = "</think>"
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def _preview(text: str, n: int = 80) -> str:
    flat = " ".join(text.split())
    return flat[:n] + ("…" if len(flat) > n else "")


def extract_json_object(text: str, *, source: str = "text") -> Any:
    """The JSON object in ``text``: the reply after any reasoning, inside a code fence if there is
    one, else the first ``{…}`` that parses. ``InputError`` when there is none."""
    body = text
    if THINK_CLOSE in body:
        body = body.rsplit(THINK_CLOSE, 1)[1]  # the answer follows the last closed reasoning block
    body = _THINK_BLOCK.sub("", body)
    if body.lstrip().startswith("<think>"):
        raise InputError(
            f"{source}: the reply is an unfinished <think> block with no JSON after it; the model ran "
            "out of tokens while thinking: raise its max tokens or turn thinking off"
        )
    for fenced in _FENCE.findall(body):
        found = _first_object(fenced, source)
        if found is not None:
            return found
    found = _first_object(body, source)
    if found is not None:
        return found
    raise InputError(
        f"{source}: no JSON object in the text ({len(text)} characters, starting {_preview(text)!r}); "
        "connect the Screenwriter's screenplay, or text that holds the screenplay JSON"
    )


def _first_object(text: str, source: str) -> Any | None:
    """The first ``{…}`` in ``text`` that parses. An object that parses only because it sits
    inside a larger one that does not (a reply cut off mid-way) is an error, not the answer."""
    decoder = json.JSONDecoder()
    broken: tuple[int, json.JSONDecodeError] | None = None
    i = text.find("{")
    while i >= 0:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            # "{" followed by anything but a key is prose ("{sic}"), not a broken object
            if broken is None and e.pos > i + 1:
                broken = (i, e)
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict):
            if broken is not None and broken[1].pos >= end:
                start, e = broken
                raise InputError(
                    f"{source}: the JSON that starts at character {start} does not parse: {e.msg} "
                    f"(line {e.lineno} column {e.colno}); was the reply cut off?"
                )
            return value
        i = text.find("{", end)
    if broken is not None:
        start, e = broken
        raise InputError(
            f"{source}: the JSON that starts at character {start} does not parse: {e.msg} "
            f"(line {e.lineno} column {e.colno}); was the reply cut off?"
        )
    return None


def screenplay_from_text(text: str, *, source: str = "screenplay text") -> Screenplay:
    """A validated screenplay from raw LLM text; ``InputError`` lists each problem with its path."""
    if not text.strip():
        raise InputError(f"{source} is empty; connect the Screenwriter or a text node with screenplay JSON")
    return load_screenplay(extract_json_object(text, source=source), source=source)
