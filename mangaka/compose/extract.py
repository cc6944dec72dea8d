"""Find the screenplay JSON in text from any LLM node, then validate it like our own output.

The rule, in order:

0. A text that is one JSON object (a screenplay file, a reply with nothing around it) is that
   object, whatever its strings hold (``</think>`` in a title is text, not reasoning).
1. Reasoning goes: the answer is what follows the last ``</think>``. A reply that is only an
   unfinished ``<think>`` block is an error (the model ran out of tokens while thinking).
2. The text is scanned once for balanced ``{…}`` spans. Inside braces, JSON strings are skipped
   (a brace in a string does not count; a string ends at its closing quote or at a line break,
   which JSON strings never hold); outside braces, quotes are prose. A span that does not parse is
   looked into when it reads as prose (``{sic}``: the first thing after the ``{`` is not a ``"``),
   and kept as a broken object when it reads as JSON.
3. Among the objects that parse, one inside a ````` code fence wins over one outside it; among
   those, the largest (the most characters) wins, the first of equal ones. So prose such as
   ``nothing else is {}`` before the screenplay, or a small example after it, is passed over.
4. A broken object that is larger than that answer (a reply cut off at the end of the text, or
   one with a syntax error) is the error instead: an object inside a broken one is not the answer.

Every step is linear in the length of the text, and an object nested deeper than
``mangaka.jsontext.MAX_DEPTH`` is refused, never recursed into.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fileio import read_text
from ..jsontext import exceeds_depth, too_deep
from ..screenplay.models import Screenplay
from ..screenplay.validate import load_screenplay

THINK_CLOSE = "</think>"
_FENCE_OPEN = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n")
_IN_BRACES = re.compile(r'[{}"]')
# A string after its opening quote, up to its closing quote or a line break; it never fails, so it
# never backtracks.
_STRING_REST = re.compile(r'(?:[^"\\\n]|\\[^\n])*"?')
_JSON_START = re.compile(r"\{\s*\"")


def _preview(text: str, n: int = 80) -> str:
    flat = " ".join(text[: n * 4].split())
    return flat[:n] + ("…" if len(flat) > n or len(text) > n * 4 else "")


@dataclass
class _Span:
    """A ``{`` at ``start`` and, once it is closed, the index after its ``}``."""

    start: int
    end: int = -1
    children: list[_Span] = field(default_factory=list)


@dataclass(frozen=True)
class _Found:
    start: int
    size: int
    fenced: bool
    value: Any = None  # the object, for one that parses; None for a broken one


def _whole_object(text: str) -> Any:
    """``text`` parsed, when all of it is one JSON object within the depth limit; else None."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")) or exceeds_depth(stripped):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# What to do about a text that holds no screenplay, by where it came from: a node's input (the
# default) or a file a command read.
FROM_A_NODE = "connect the Screenwriter's screenplay, or text that holds the screenplay JSON"
FROM_A_FILE = "give a screenplay JSON file (`python -m mangaka write CHAPTER -o chapter.json` writes one)"


def extract_json_object(text: str, *, source: str = "text", fix: str = FROM_A_NODE) -> Any:
    """The JSON object in ``text`` by the rule in the module docstring. ``InputError`` when there
    is none (saying ``fix``), or when the largest JSON in it is cut off or broken."""
    whole = _whole_object(text)
    if whole is not None:
        return whole
    body = text
    if THINK_CLOSE in body:
        body = body.rsplit(THINK_CLOSE, 1)[1]  # the answer follows the last closed reasoning block
    if body.lstrip().startswith("<think>"):
        raise InputError(
            f"{source}: the reply is an unfinished <think> block with no JSON after it; the model ran "
            "out of tokens while thinking: raise its max tokens or turn thinking off"
        )
    found = _candidates(body, source)
    if any(f.fenced and f.value is not None for f in found):
        found = [f for f in found if f.fenced]
    best = max(found, key=lambda f: (f.size, -f.start), default=None)
    if best is None:
        raise InputError(
            f"{source}: no JSON object in the text ({len(text)} characters, starting {_preview(text)!r}); "
            + fix
        )
    if best.value is None:
        raise InputError(_broken(body, best.start, best.start + best.size, source))
    return best.value


def _candidates(text: str, source: str) -> list[_Found]:
    """Every object of ``text`` that parses, and every broken one, by steps 2 and 4 of the rule."""
    roots, unclosed = _spans(text)
    fences = _fences(text)
    found: list[_Found] = []

    def fenced(start: int, end: int) -> bool:
        k = bisect.bisect_right(fences, (start, len(text) + 1)) - 1
        return k >= 0 and fences[k][0] <= start and end <= fences[k][1]

    work = list(roots)
    for span in unclosed:  # bottom to top: each one's closed children come before the next one
        if _JSON_START.match(text, span.start):
            found.append(_Found(span.start, len(text) - span.start, fenced(span.start, len(text))))
            break  # everything after it is inside it
        work += span.children
    while work:
        span = work.pop()
        chunk = text[span.start : span.end]
        if exceeds_depth(chunk):
            found.append(_Found(span.start, len(chunk), fenced(span.start, span.end)))
            continue
        try:
            value = json.loads(chunk)
        except json.JSONDecodeError:
            if _JSON_START.match(chunk):
                found.append(_Found(span.start, len(chunk), fenced(span.start, span.end)))
            else:
                work += span.children  # prose in braces: an object may sit inside it
            continue
        found.append(_Found(span.start, len(chunk), fenced(span.start, span.end), value))
    return found


def _spans(text: str) -> tuple[list[_Span], list[_Span]]:
    """The balanced ``{…}`` spans of ``text`` not inside another closed one, and the ``{`` left
    open at the end of the text (outermost first), in one pass."""
    roots: list[_Span] = []
    stack: list[_Span] = []
    pos = 0
    while True:
        if not stack:
            i = text.find("{", pos)
            if i < 0:
                break
            stack.append(_Span(i))
            pos = i + 1
            continue
        m = _IN_BRACES.search(text, pos)
        if m is None:
            break
        c, i = m.group(), m.start()
        if c == "{":
            stack.append(_Span(i))
            pos = i + 1
        elif c == "}":
            span = stack.pop()
            span.end = i + 1
            (stack[-1].children if stack else roots).append(span)
            pos = i + 1
        else:
            pos = _STRING_REST.match(text, i + 1).end()  # type: ignore[union-attr]
    return roots, stack


def _fences(text: str) -> list[tuple[int, int]]:
    """Where the contents of each closed ````` code fence start and end, in order."""
    out: list[tuple[int, int]] = []
    pos = 0
    while (m := _FENCE_OPEN.search(text, pos)) is not None:
        close = text.find("```", m.end())
        if close < 0:
            break
        out.append((m.end(), close))
        pos = close + 3
    return out


def _broken(text: str, start: int, end: int, source: str) -> str:
    """Why the JSON object at ``text[start:end]`` does not parse (positions in all of ``text``);
    worked out only for the one reported, as it counts the lines before it."""
    chunk = text[start:end]
    if exceeds_depth(chunk):
        return f"{too_deep(source)} (the object at character {start})"
    try:
        json.loads(chunk)
    except json.JSONDecodeError as e:
        line = text.count("\n", 0, start) + e.lineno
        column = e.colno + (start - text.rfind("\n", 0, start) - 1 if e.lineno == 1 else 0)
        return (
            f"{source}: the JSON that starts at character {start} does not parse: {e.msg} "
            f"(line {line} column {column}); was the reply cut off?"
        )
    return f"{source}: the JSON that starts at character {start} does not parse; was the reply cut off?"


def screenplay_from_text(text: str, *, source: str = "screenplay text", fix: str = FROM_A_NODE) -> Screenplay:
    """A validated screenplay from raw LLM text; ``InputError`` lists each problem with its path
    (and says ``fix`` where the text holds no screenplay: ``FROM_A_FILE`` for a command's file)."""
    if not text.strip():
        empty = "connect the Screenwriter or a text node with screenplay JSON" if fix == FROM_A_NODE else fix
        raise InputError(f"{source} is empty; {empty}")
    return load_screenplay(extract_json_object(text, source=source, fix=fix), source=source)


def screenplay_from_file(path: str | Path) -> Screenplay:
    """A validated screenplay from a JSON file a command was given (``FROM_A_FILE`` where it holds
    none)."""
    return screenplay_from_text(read_text(path, "screenplay file"), source=str(path), fix=FROM_A_FILE)
