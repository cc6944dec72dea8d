"""JSON from text nobody checked: a nesting limit applied before parsing, one message for it.

Python's JSON parser, and every walker after it (jsonschema, the repairs, pydantic), recurses once
per level, so text nested a thousand levels deep ends in a ``RecursionError`` instead of an answer.
Every JSON a user or a model gives the engine (screenplays, bibles, workflows, replies) is parsed
through ``loads`` here, which refuses anything nested deeper than ``MAX_DEPTH`` with a message
naming the input. Nothing the pack reads comes near the limit (a screenplay is 4 levels deep, an
API-format workflow 4 or 5). GGUF metadata arrays (``mangaka.llm.gguf_info``) use the same limit.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from .errors import InputError

MAX_DEPTH = 64

# A string (skipped whole, so brackets inside it do not count; an unclosed one runs to the end, so
# the pattern never backtracks) or one bracket.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def too_deep(source: str, what: str = "JSON") -> str:
    """The message for input nested past ``MAX_DEPTH`` levels."""
    return (
        f"{source}: the {what} is nested more than {MAX_DEPTH} levels deep; nothing Mangaka reads "
        "is nested that deeply: check that this is the right file or reply"
    )


def exceeds_depth(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the arrays and objects of JSON ``text`` nest more than ``limit`` levels deep.

    One pass over the text; it stops at the first bracket past the limit. Brackets inside strings
    do not count; for text that is not JSON the answer is only a bound, and the parser then says
    what is wrong with it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text.count("{") + text.count("[") <= limit:
        return False  # cannot be deeper than the number of openers (the common, short case)
    depth = 0
    for match in _TOKENS.finditer(text):
        c = match.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth = max(0, depth - 1)
    return False


def loads(text: str | bytes, source: str, fix: str = "") -> Any:
    """``text`` parsed as JSON; ``InputError`` names ``source``, the line and column, and ``fix``
    (appended after "; ") when it is not valid JSON, nests past ``MAX_DEPTH`` or holds an integer
    too long for Python to convert (``sys.get_int_max_str_digits()``)."""
    if exceeds_depth(text):
        raise InputError(too_deep(source))
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        hint = f"; {fix}" if fix else ""
        raise InputError(
            f"{source}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}{hint}"
        ) from None
    except UnicodeDecodeError as e:
        raise InputError(f"{source}: not UTF-8 text ({e.reason}); save it as UTF-8") from None
    except ValueError:  # the only other one: an integer past Python's digit limit
        raise InputError(
            f"{source}: holds a number of more than {sys.get_int_max_str_digits()} digits; nothing Mangaka "
            "reads holds such a number: check that this is the right file or reply"
        ) from None
