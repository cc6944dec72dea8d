"""Structured output: constrain → parse → validate → retry with the problems fed back.

``generate_json`` is the loop every schema-shaped call goes through (the Screenwriter's two calls,
the Structured Output node with a user's schema). Each try decodes under the schema (thinking off),
parses the JSON, repairs what has one right fix (``mangaka.repair``: padded strings, blank optional
values, then the caller's own repairs), validates it with jsonschema (Draft 2020-12) and then with
the caller's semantic check. Repairs are logged and kept on the attempt, never sent to the model. A
try still invalid is shown back to the model (its reply, then the problems, each with the JSON
path it concerns) and the model tries again; a reply cut off by the token limit is never returned.
After the last try, ``InvalidOutputError`` carries every attempt.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError as _JsonSchemaError
from jsonschema.exceptions import ValidationError as _JsonValidationError
from pydantic import BaseModel, ValidationError

from .errors import Cancelled, ContextOverflowError, InvalidOutputError, SchemaError
from .jsontext import MAX_DEPTH, exceeds_depth
from .llm.base import (
    LLM,
    CallContext,
    Completion,
    Message,
    Sampling,
    Usage,
)
from .llm.budget import json_token_budget
from .prompts import prompt
from .repair import Repair, tidy_strings

logger = logging.getLogger(__name__)

# Problems fed back to the model per try (the rest are counted, not listed).
MAX_FEEDBACK_PROBLEMS = 20
# Characters kept of one problem message (jsonschema quotes whole values).
MAX_PROBLEM_CHARS = 240

Validate = Callable[[Any], list[str]]
# repair(data) -> (data, repairs): deterministic fixes of schema-valid data, before validation.
RepairFn = Callable[[Any], tuple[Any, list[Repair]]]


@dataclass
class Attempt:
    """One try: the raw reply, what was wrong with it (empty when it was accepted), why it ended."""

    text: str
    problems: list[str]
    finish_reason: str
    usage: Usage = field(default_factory=Usage)
    call: str = "output"
    repairs: list[str] = field(default_factory=list)  # what was fixed without asking the model

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def json_path(parts: Iterable[str | int]) -> str:
    """``["characters", 2, "id"]`` → ``characters[2].id``; the root is ``(top level)``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _clip(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ecma_anchors(pattern: str) -> str:
    """``pattern`` for Python's ``re`` with ``$`` read as JSON Schema (ECMA-262) and pydantic read it:
    the end of the string. Python's ``$`` also matches before a final line break, so ``"akira\n"``
    would match ``^[a-z]+$`` here and fail the model. ``$`` inside a class or escaped is left alone."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "$":
            c = r"\Z"
        out.append(c)
        i += 1
    return "".join(out)


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(_ecma_anchors(pattern))


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _compiled(pattern).search(instance):
        yield _JsonValidationError(f"{instance!r} does not match {pattern!r}")


# Draft 2020-12 with ``pattern`` read as the spec (and pydantic) read it; see ``_ecma_anchors``.
Validator = validators.extend(Draft202012Validator, {"pattern": _pattern})
_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate_problems(data: Any) -> list[str]:
    """Strings (and keys) holding a lone UTF-16 surrogate (JSON ``"\\ud800"``): no text, whatever
    the schema says; pydantic and UTF-8 refuse them, so every validation here does too."""
    problems: list[str] = []
    todo: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, dict):
            todo += [((*path, k), v) for k, v in reversed(value.items())]
            value = "".join(k for k in value if isinstance(k, str))  # the keys
        elif isinstance(value, list):
            todo += [((*path, i), v) for i, v in reversed(list(enumerate(value)))]
        if isinstance(value, str) and (found := _SURROGATE.search(value)):
            problems.append(
                f"{json_path(path)}: holds a lone surrogate (\\u{ord(found.group()):04x}), which is "
                "not a character; write the text itself, as UTF-8"
            )
    return problems


def check_schema(schema: dict[str, Any]) -> Any:
    """A validator for ``schema`` (``Validator``: Draft 2020-12, ``pattern`` anchored as the spec
    says); raises ``SchemaError`` when the schema itself is invalid."""
    if not isinstance(schema, dict):
        raise SchemaError(f"a JSON Schema must be a JSON object, not {type(schema).__name__}")
    try:
        Draft202012Validator.check_schema(schema)
    except _JsonSchemaError as e:
        raise SchemaError(
            f"invalid JSON Schema at {json_path(e.absolute_path)}: {_clip(e.message)}"
        ) from None
    return Validator(schema)


def schema_problems(data: Any, schema: dict[str, Any] | Any) -> list[str]:
    """Every way ``data`` breaks ``schema``, as ``"<json path>: <message>"``, in document order; a
    string holding a lone surrogate is a problem under any schema."""
    validator = check_schema(schema) if isinstance(schema, dict) else schema
    errors = sorted(
        validator.iter_errors(data),
        key=lambda e: ([(0, p, "") if isinstance(p, int) else (1, 0, p) for p in e.absolute_path], e.message),
    )
    found = [f"{json_path(e.absolute_path)}: {_clip(_short_instance(e))}" for e in errors]
    return _surrogate_problems(data) + found


def model_problems(model: type[BaseModel], data: Any) -> list[str]:
    """Every way ``data`` fails ``model`` (pydantic), as ``"<json path>: <message>"`` like
    ``schema_problems``; empty when it validates. For the rare case the schema let through what
    the model refuses: it becomes feedback or an ``InputError``, never a traceback."""
    try:
        model.model_validate(data)
    except ValidationError as e:
        return [f"{json_path(err['loc'])}: {_clip(str(err['msg']))}" for err in e.errors()]
    return []


def _short_instance(error: Any) -> str:
    """The error's message with a long offending value shortened in place, so the reason after
    it ("is too long", "is not one of …") survives the clip."""
    message = error.message
    shown = repr(error.instance)
    if len(shown) > 80 and shown in message:
        head = repr(error.instance[:60]) if isinstance(error.instance, str) else shown[:60]
        note = f" ({len(error.instance)} characters)" if isinstance(error.instance, str) else ""
        message = message.replace(
            shown, f"{head[:-1]}…{head[-1]}{note}" if isinstance(error.instance, str) else head + "…"
        )
    return message


def parse_json(text: str) -> tuple[Any, list[str]]:
    """``(data, [])`` or ``(None, [problem])`` for a reply that is not one JSON value."""
    if not text.strip():
        return None, ["the reply is empty; it must be one JSON object"]
    if exceeds_depth(text):
        return None, [
            f"the reply is nested more than {MAX_DEPTH} levels deep; write the one JSON object asked for"
        ]
    try:
        return json.loads(text), []
    except json.JSONDecodeError as e:
        return None, [f"the reply is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"]


def _summary(attempts: list[Attempt]) -> str:
    parts = []
    for i, a in enumerate(attempts, 1):
        shown = "; ".join(a.problems[:3])
        more = f" (and {len(a.problems) - 3} more)" if len(a.problems) > 3 else ""
        parts.append(f"try {i}: {shown}{more}")
    return " | ".join(parts)


def _feedback(problems: list[str], language: str) -> str:
    listed = problems[:MAX_FEEDBACK_PROBLEMS]
    lines = "\n".join(f"- {p}" for p in listed)
    if len(problems) > len(listed):
        lines += f"\n- … and {len(problems) - len(listed)} more"
    return prompt("structured/invalid", language, problems=lines)


def generate_json(
    llm: LLM,
    messages: list[Message],
    schema: dict[str, Any],
    *,
    validate: Validate | None = None,
    repair: RepairFn | None = None,
    max_attempts: int = 3,
    max_tokens: int | None = None,
    sampling: Sampling | None = None,
    context: CallContext | None = None,
    language: str = "en",
    call: str = "output",
) -> tuple[Any, list[Attempt]]:
    """Generate JSON matching ``schema``; returns ``(data, attempts)``, the last attempt the accepted one.

    Padded strings and blank optional values are repaired before the schema check; ``repair(data) ->
    (data, repairs)`` runs after it passes (deterministic fixes the grammar cannot express: a name listed
    twice…); ``validate(data) -> problems`` runs last (semantic rules that need the model: unique ids,
    existing references…). ``max_tokens`` defaults to the schema's worst-case token budget, which raises
    ``SchemaError`` for an unbounded schema: bound it, or pass ``max_tokens``. ``language`` picks the
    language of the feedback messages; ``call`` names this call in attempts, logs and errors. Raises
    ``InvalidOutputError`` (with every attempt) when no try is valid, ``Cancelled`` when ``cancel()``
    turns true between tries; backend errors (context overflow…) propagate.
    """
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    context = context or CallContext()
    validator = check_schema(schema)
    if max_tokens is None:
        max_tokens = json_token_budget(schema)
    conversation = list(messages)
    note: str | None = None  # the cut-off note for the next try, added to its last user message
    attempts: list[Attempt] = []
    for number in range(1, max_attempts + 1):
        if context.cancelled():
            raise Cancelled(f"{call}: generation was interrupted before try {number}")
        sent = _with_note(conversation, note)
        where = f"{call}: try {number} of {max_attempts}"
        completion = _ask(llm, sent, schema, sampling, max_tokens, context, attempts, where)
        text, note = completion.text, None
        if completion.finish_reason == "length":
            tokens = completion.usage.completion_tokens or max_tokens
            problems = [f"the reply was cut off at {tokens} tokens, before the JSON was complete"]
            attempts.append(Attempt(text, problems, "length", completion.usage, call))
            logger.warning("%s cut off at %d tokens", where, tokens)
            # The cut reply is not echoed back: it would only eat the context that just ran out.
            note = prompt("structured/cut_off", language, tokens=tokens)
            continue
        data, problems, repairs = _judge(text, schema, validator, repair, validate)
        attempts.append(Attempt(text, problems, completion.finish_reason, completion.usage, call, repairs))
        for r in repairs:
            logger.info("%s: try %d repaired %s", call, number, r)
        if not problems:
            done = f" after {len(repairs)} repairs" if repairs else ""
            logger.info("%s: valid on try %d of %d%s", call, number, max_attempts, done)
            return data, attempts
        logger.warning("%s invalid (%d problems): %s", where, len(problems), problems[0])
        conversation = [
            *sent,
            {"role": "assistant", "content": text},
            {"role": "user", "content": _feedback(problems, language)},
        ]
    raise InvalidOutputError(
        f"{call}: the model's output was invalid on all {max_attempts} tries. {_summary(attempts)}. "
        "Try a stronger model, the 'greedy' sampling preset, or a smaller request.",
        [a.as_dict() for a in attempts],
    )


def _ask(
    llm: LLM,
    sent: list[Message],
    schema: dict[str, Any],
    sampling: Sampling | None,
    max_tokens: int,
    context: CallContext,
    attempts: list[Attempt],
    where: str,
) -> Completion:
    """One constrained completion; a context overflow after the first try ends the call."""
    try:
        return llm.complete(
            sent,
            schema=schema,
            sampling=sampling,
            max_tokens=max_tokens,
            thinking=False,
            context=context,
        )
    except ContextOverflowError as e:
        if not attempts:
            raise  # the request itself does not fit: the caller's message says so
        raise InvalidOutputError(
            f"{where} no longer fits in the context ({e}). {_summary(attempts)}. "
            "Use a larger context or a stronger model.",
            [a.as_dict() for a in attempts],
        ) from e


def _judge(
    text: str,
    schema: dict[str, Any],
    validator: Any,
    repair: RepairFn | None,
    validate: Validate | None,
) -> tuple[Any, list[str], list[str]]:
    """A reply parsed, repaired and checked: ``(data, problems, repairs)``; no problems means accepted."""
    data, problems = parse_json(text)
    if problems:
        return data, problems, []
    data, repairs = tidy_strings(data, schema)
    problems = schema_problems(data, validator)
    if not problems and repair is not None:
        data, more = repair(data)
        repairs += more
    if not problems and validate is not None:
        problems = validate(data)
    return data, problems, [str(r) for r in repairs]


def _with_note(conversation: list[Message], note: str | None) -> list[Message]:
    """``conversation`` with ``note`` added to its last user message (or as a new one)."""
    if note is None:
        return conversation
    if conversation and conversation[-1].get("role") == "user":
        last = conversation[-1]
        return [*conversation[:-1], {**last, "content": f"{last['content']}\n\n{note}"}]
    return [*conversation, {"role": "user", "content": note}]
