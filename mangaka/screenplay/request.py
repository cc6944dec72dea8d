"""What a screenplay call asks for, checked once, before any model is loaded.

``ScreenplayRequest`` is frozen and validates itself at construction: every count in its range,
a known language and sampling preset, a usable style. ``check_chapter`` refuses a chapter that
has nothing to adapt. Both raise ``InputError`` naming the input and the fix, in well under a
second, so a bad input never costs a model load (a minute and 22 GB for Qwen3.5-35B-A3B).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..book_file import read_book
from ..errors import InputError
from ..llm.base import Sampling, sampling_preset
from ..source.language import NAMES as LANGUAGE_NAME
from ..source.language import detect_language
from .options import (
    DEFAULT_SAMPLING,
    MAX_SEED,
    OPTIONS,
    SMALL_MODEL,
)
from .scenes import AUTO


def check_count(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as a whole number in ``[low, high]``, or ``InputError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError.about(name, f"must be a whole number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise InputError.about(name, f"must be from {low} to {high}, got {value}")
    return value


def check_count_or_auto(name: str, value: Any, low: int, high: int) -> int | str:
    """``value`` as ``check_count`` takes it, or the word ``auto`` (a count from the chapter)."""
    if isinstance(value, str) and value.strip().casefold() == AUTO:
        return AUTO
    if isinstance(value, str):
        raise InputError.about(name, f"must be a whole number from {low} to {high} or 'auto', got {value!r}")
    return check_count(name, value, low, high)


def sampling_settings(name: str, seed: int = 0) -> Sampling:
    """The sampling preset ``name`` with ``seed``; ``InputError`` lists the presets for an unknown one."""
    return sampling_preset(name).replace(seed=check_count("seed", seed, 0, MAX_SEED))


def check_chapter(chapter: Any, source: str = "chapter") -> str:
    """The chapter, if it has something to adapt: not empty, and some letters or digits in it.

    A text of only punctuation and symbols (``……！？——“”「」。``) is refused: the model would
    invent a story rather than adapt one.
    """
    if not isinstance(chapter, str):
        raise InputError(f"{source} must be text, got {type(chapter).__name__}")
    if not chapter.strip():
        raise InputError(f"{source} is empty: give the text of one chapter")
    if not any(unicodedata.category(ch)[0] in "LN" for ch in chapter):
        raise InputError(
            f"{source} has no letters or digits (only punctuation, symbols or spaces): "
            "give the text of one chapter"
        )
    return chapter


def read_chapter(path: Path) -> str:
    """A chapter file's text (UTF-8, UTF-16 with a BOM or GB18030), refused when there is nothing
    to adapt in it."""
    if path.is_dir():
        raise InputError(f"chapter file {path} is a folder; give a text file with the chapter")
    if not path.exists():
        raise InputError(f"chapter file {path} not found; give the path of a text file with the chapter")
    return check_chapter(read_book(path, "chapter file"), f"chapter file {path}")


@dataclass(frozen=True)
class ScreenplayRequest:
    """The options of one screenplay call; invalid values raise ``InputError`` at construction.

    ``sampling`` is a preset name (``PRESETS``) or ready ``Sampling`` settings; ``seed`` applies
    to a preset name only (``Sampling`` carries its own).
    """

    # Every default, range and choice is declared once, in options.py.
    language: str = OPTIONS["language"].default
    panels: int | str = OPTIONS["panels"].default  # or "auto": from the chapter's length (scenes.py)
    dialogue: int | str = OPTIONS["dialogue"].default  # or "auto": from the chapter's quoted lines
    max_characters: int = OPTIONS["max_characters"].default
    style: str = OPTIONS["style"].default
    sampling: str | Sampling | None = OPTIONS["sampling"].default
    seed: int = OPTIONS["seed"].default
    max_attempts: int = OPTIONS["max_attempts"].default
    think_tokens: int = OPTIONS["think_tokens"].default
    prompt_language: str | None = OPTIONS["prompt_language"].default  # None: the screenplay's own
    scene_chars: int = OPTIONS["scene_chars"].default  # a longer chapter is written scene by scene
    dialogue_from: str = OPTIONS["dialogue_from"].default  # the chapter's quotes verbatim, or "free"
    speaker_hints: bool = OPTIONS["speaker_hints"].default  # the text's likely speaker, shown
    speaker_guesses: str = OPTIONS["speaker_guesses"].default  # "force": guesses forced as sure ones

    def __post_init__(self) -> None:
        if self.sampling is None:  # callers that pass "no preference"
            object.__setattr__(self, "sampling", DEFAULT_SAMPLING)
        for o in OPTIONS.values():  # every field as declared (options.py); nothing checked beside it
            object.__setattr__(self, o.field, o.check(getattr(self, o.field)))

    def for_chapter(self, chapter: str) -> ScreenplayRequest:
        """This request with the chapter's language: detected from its text for ``auto``; an explicit
        one the text clearly contradicts is refused, naming both (the quote marks and names of one
        language do not read another's text; translation is not a step of this pack)."""
        found = detect_language(chapter)
        if self.language == "auto":
            return replace(self, language=found.language)
        if found.sure and found.language != self.language:
            raise InputError.about(
                "language",
                f"is {self.language!r} ({LANGUAGE_NAME.get(self.language, self.language)}), but the chapter "
                f"is written in {found.name} ({found.why}); choose 'auto' or {found.language!r} (a "
                "screenplay keeps its chapter's language: translate the chapter first)",
            )
        return self

    def for_model(self, parameters: int | None) -> ScreenplayRequest:
        """This request with ``speaker_guesses`` settled for a model of ``parameters`` (``None``:
        unknown, a server's): ``auto`` is ``force`` under ``SMALL_MODEL``, else ``hint``."""
        if self.speaker_guesses != "auto":
            return self
        small = parameters is not None and parameters < SMALL_MODEL
        return replace(self, speaker_guesses="force" if small else "hint")

    @property
    def grounded(self) -> bool:
        """Dialogue from the chapter's quotes and panels tied to its units (``screenplay/grounded.py``)."""
        return self.dialogue_from == "chapter"

    @property
    def sampling_settings(self) -> Sampling:
        if isinstance(self.sampling, Sampling):
            return self.sampling
        return sampling_settings(self.sampling, self.seed)
