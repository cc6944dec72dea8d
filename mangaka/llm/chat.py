"""Chat message normalisation and thinking (reasoning) handling, shared by every backend."""

from __future__ import annotations

from ..errors import MessageError
from .base import Message

ROLES = ("system", "user", "assistant")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def normalize_messages(messages: list[Message]) -> list[Message]:
    """Every system message merged into one at position 0; the other messages keep their order.

    Qwen3.5's template raises "System message must be at the beginning." otherwise.
    """
    if not messages:
        raise MessageError("no messages to send: give at least one user message")
    system: list[str] = []
    rest: list[Message] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        if role not in ROLES:
            raise MessageError(f"message {i} has role {role!r}; use one of {', '.join(ROLES)}")
        if not isinstance(content, str):
            raise MessageError(f"message {i} ({role}) has {type(content).__name__} content; text only")
        if role == "system":
            if content.strip():
                system.append(content.strip())
        else:
            rest.append({"role": role, "content": content})
    if not any(m["role"] == "user" for m in rest):
        raise MessageError("the messages have no user message; add the request as a user message")
    head = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    return head + rest


def split_reasoning(text: str, *, prefilled_open: bool = False) -> tuple[str, str, bool]:
    """Split ``<think>…</think>`` off a reply: returns (reasoning, answer, closed).

    ``prefilled_open``: the prompt already ended with ``<think>`` (Qwen3.5 with thinking on), so
    the reply starts inside the reasoning. ``closed`` is False when the reasoning never ended
    (the budget ran out while thinking). An empty ``<think></think>`` block is fine.
    """
    body = text
    stripped = body.lstrip()
    if stripped.startswith(THINK_OPEN):
        body = stripped[len(THINK_OPEN) :]
    elif not prefilled_open:
        return "", text.strip(), True
    reasoning, sep, answer = body.partition(THINK_CLOSE)
    if not sep:
        return reasoning.strip(), "", False
    return reasoning.strip(), answer.strip(), True
