"""One error hierarchy for the engine. Every message says what was wrong, with which input, and
what to do about it; nodes show it in ComfyUI as it is."""

from __future__ import annotations

from collections.abc import Mapping


class MangakaError(Exception):
    """Base of every error the engine raises on purpose."""


class ModelFileError(MangakaError):
    """The model or adapter file is missing, unreadable or not GGUF."""


class UnsupportedArchitectureError(MangakaError):
    """The installed llama.cpp cannot load this model's architecture."""


class BackendMissingError(MangakaError):
    """An optional backend library (llama-cpp-python, llguidance) is not installed."""


class ContextOverflowError(MangakaError):
    """The prompt does not fit in the context window."""

    def __init__(self, message: str, prompt_tokens: int, n_ctx: int) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.n_ctx = n_ctx


class SchemaError(MangakaError):
    """A JSON Schema cannot be compiled to a grammar (nothing falls back to "any JSON")."""


class MessageError(MangakaError):
    """Chat messages are malformed (unknown role, empty conversation, non-text content)."""


class LoraError(MangakaError):
    """A LoRA adapter cannot be attached to this model."""


class GenerationError(MangakaError):
    """Generation produced no usable result (cut off by the token budget, thinking only, …).

    ``completion``: what was generated when there is something (the reasoning of a call that
    thought until its budget), for a caller that can use part of it (the Screenwriter's plan)."""

    def __init__(self, message: str, completion: object | None = None) -> None:
        super().__init__(message)
        self.completion = completion


class InvalidOutputError(MangakaError):
    """The model's output failed validation on every try; ``attempts`` holds each one."""

    def __init__(self, message: str, attempts: list[dict]) -> None:
        super().__init__(message)
        self.attempts = attempts


class InputError(MangakaError):
    """A user input (chapter text, counts, options) is unusable as given.

    ``field``: the option it is about, by the engine's name (``panels``, ``n_ctx``), or None; then
    ``detail`` is the message without that name, so that the command line and the nodes can name
    the option their own way (``named("--panels")``, ``named("dialogue_lines")``) instead of
    matching the message's words.
    """

    def __init__(self, message: str, *, field: str | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.detail = detail if detail is not None else message

    @classmethod
    def about(cls, field: str, detail: str, label: str | None = None) -> InputError:
        """``<label> <detail>``: an error about the option ``field`` (``label``: how the engine names
        it in the message, the field itself by default)."""
        return cls(f"{label or field} {detail}", field=field, detail=detail)

    def named(self, name: str) -> InputError:
        """The same error, its option called ``name``; unchanged when it is about no option."""
        return self if self.field is None else InputError.about(self.field, self.detail, name)

    def renamed(self, names: Mapping[str, str]) -> InputError:
        """The same error, its option called what ``names`` calls its field (a flag, a widget);
        unchanged when ``names`` has no name for it."""
        name = names.get(self.field or "")
        return self.named(name) if name else self


class Cancelled(MangakaError):
    """The run was interrupted by the user."""
