"""The one protocol every LLM backend implements, and the values that cross it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import InputError

Message = dict[str, str]
# on_progress(done, total): tokens generated so far and the token budget.
ProgressFn = Callable[[int, int], None]
# cancel(): True when the user asked to stop (ComfyUI's interrupt, Ctrl-C).
CancelFn = Callable[[], bool]


@dataclass(frozen=True)
class Sampling:
    """Sampling settings. Presets follow the Qwen3.5 model card (see ``PRESETS``)."""

    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    min_p: float = 0.0
    presence_penalty: float = 1.5
    repeat_penalty: float = 1.0
    seed: int = 0

    def replace(self, **changes: Any) -> Sampling:
        return Sampling(**{**asdict(self), **changes})


PRESETS: dict[str, Sampling] = {
    # Qwen3.5 model card, non-thinking general use: the default for structured output.
    "qwen3.5-instruct": Sampling(0.7, 0.8, 20, 0.0, 1.5, 1.0),
    # Qwen3.5 model card, thinking general use.
    "qwen3.5-thinking": Sampling(1.0, 0.95, 20, 0.0, 1.5, 1.0),
    # Deterministic: greedy decoding, for tests and reproducible drafts.
    "greedy": Sampling(0.0, 1.0, 1, 0.0, 0.0, 1.0),
}


def sampling_preset(name: str) -> Sampling:
    """The preset ``name``; ``InputError`` lists the presets for an unknown one."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise InputError.about(
            "sampling", f"{name!r} is unknown; choose one of: {', '.join(PRESETS)}", "sampling preset"
        ) from None


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens actually decoded this call (the rest came from a reused prefix).
    prompt_tokens_decoded: int = 0
    # Of the completion tokens, those the grammar forced, kept from a jump-forward draft (a draft's last
    # token may reach past the forced bytes, as the model wrote it before); 0 where the backend cannot tell.
    forced_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.prompt_tokens_decoded + other.prompt_tokens_decoded,
            self.forced_tokens + other.forced_tokens,
        )


@dataclass(frozen=True)
class CallContext:
    """What a caller hands down with a request, as one value: where progress goes, how to stop.

    ``on_progress(done, total)`` counts generated tokens; ``cancel()`` turns true when the user
    asked to stop. ``share(offset, total)`` is the context for one part of a longer job: its
    tokens are reported after ``offset`` tokens, against the job's ``total``.
    """

    on_progress: ProgressFn | None = None
    cancel: CancelFn | None = None

    def share(self, offset: int, total: int) -> CallContext:
        report = self.on_progress
        if report is None:
            return self
        return CallContext(lambda done, _limit: report(min(offset + done, total), total), self.cancel)

    def cancelled(self) -> bool:
        return self.cancel is not None and bool(self.cancel())


@dataclass
class Completion:
    text: str
    reasoning: str = ""
    finish_reason: str = "stop"  # "stop" | "length"
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class LLM(Protocol):
    """``complete`` is the whole contract; both backends (in-process, OpenAI-compatible) implement it.

    ``schema``: a JSON Schema the output must match (decoding is constrained and thinking is
    off). ``thinking``: let the model reason first (free text only); the reasoning comes back in
    ``Completion.reasoning``. ``max_tokens`` bounds the generated tokens, thinking included.
    ``context``: where progress goes and how to stop (``CallContext(on_progress, cancel)``).
    An in-process model also says its size (``parameters``), which a server's does not: the
    Screenwriter forces the reading's guessed speakers for a small one (``speaker_guesses``).
    """

    name: str

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
        max_tokens: int = 1024,
        thinking: bool = False,
        context: CallContext | None = None,
    ) -> Completion: ...

    def count_tokens(self, messages: list[Message], *, thinking: bool = False) -> int: ...

    @property
    def n_ctx(self) -> int: ...
