"""Fakes the tests share, named as such: an LLM that answers from a script (for what needs no real
model: the retry loop, repairs, prompts), and the small screenplay pieces its scripts are made of.
Real models are in the model tier (``tests/model``)."""

from __future__ import annotations

import copy
import json
from typing import Any

from mangaka.llm.base import CallContext, Completion, Message, Sampling, Usage

Reply = str | dict[str, Any] | Completion | Exception


class FakeScriptedLLM:
    """A fake LLM for tests: returns queued replies in order and records every call it gets."""

    name = "fake-scripted"

    def __init__(self, *replies: Reply, n_ctx: int = 32768) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []
        self._n_ctx = n_ctx

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
        max_tokens: int = 1024,
        thinking: bool = False,
        context: CallContext | None = None,
    ) -> Completion:
        on_progress = (context or CallContext()).on_progress
        self.calls.append(
            {
                "messages": copy.deepcopy(messages),
                "schema": schema,
                "sampling": sampling,
                "max_tokens": max_tokens,
                "thinking": thinking,
            }
        )
        assert self.replies, "FakeScriptedLLM ran out of scripted replies"
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if not isinstance(reply, Completion):
            text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
            reply = Completion(text=text, usage=Usage(prompt_tokens=100, completion_tokens=len(text)))
        if on_progress is not None:
            on_progress(reply.usage.completion_tokens, max_tokens)
        return reply

    def count_tokens(self, messages: list[Message], *, thinking: bool = False) -> int:
        return sum(len(m["content"]) for m in messages)

    @property
    def n_ctx(self) -> int:
        return self._n_ctx


CAST = {
    "characters": [
        {"id": "akira", "name": "Akira", "appearance": "teenage boy, messy black hair, grey eyes"},
        {"id": "mei", "name": "Mei", "appearance": "girl, long brown braid, yellow raincoat"},
    ]
}


def panel(pid: str, characters: list[str]) -> dict[str, Any]:
    return {
        "id": pid,
        "shot": "medium",
        "angle": "eye_level",
        "characters": characters,
        "action": f"action of {pid}",
        "expression": "",
        "background": "station",
        "lighting": "night",
        "props": [],
    }


def script(placements: list[str], panels: int = 3) -> dict[str, Any]:
    speakers = ["narrator", "akira", "mei"]
    return {
        "title": "The Last Train",
        "dialogue": [
            {"speaker": speakers[i % 3], "line": f"line {i + 1}", "emotion": "neutral", "panel": p}
            for i, p in enumerate(placements)
        ],
        "panels": [
            panel(f"p{j}", ["mei", "mei"] if j == 2 else ["akira", "mei"]) for j in range(1, panels + 1)
        ],
    }
