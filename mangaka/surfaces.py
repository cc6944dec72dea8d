"""Which declared options each surface shows: the one registry of option sets → commands and nodes.

The options are declared once, in six sets (``mangaka/options.py`` says how). This module says,
once, where each set appears: on which commands (every option of the set with a flag, or the
fields named, with the command's own defaults) and on which nodes (their widgets). The command
line builds its flags from it (``mangaka/cli/``), the docs generator its tables' "where" lines
(``mangaka/devtools/docs.py``), the locale generator the Chinese, Japanese and Korean names and
tooltips of every node that shows a widget (``mangaka/devtools/locales.py``), and the tests
check each flag and widget against it. A new command or node that shows declared options gets one entry here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .batch.options import BOOK_OPTIONS
from .llm.options import LOAD_OPTIONS, RUN_OPTIONS
from .options import UNSET, Option
from .page.options import PAGE_OPTIONS
from .screenplay.options import OPTIONS as REQUEST_OPTIONS
from .video.options import VIDEO_OPTIONS


@dataclass(frozen=True)
class OptionSet:
    """One declared set: its options, the module that declares them, its docs heading and what its
    table says beside the registry's "where" (``note``)."""

    title: str
    module: str
    options: Mapping[str, Option]
    note: str = ""


@dataclass(frozen=True)
class Shown:
    """A set on one command: ``fields`` (None: every option with a flag), the command's own
    defaults by field (its help says them) and how its help says a default of None (``unset``)."""

    set: str
    fields: tuple[str, ...] | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    unset: str = UNSET

    def options(self) -> dict[str, Option]:
        declared = OPTION_SETS[self.set].options
        return {k: o for k, o in declared.items() if self.fields is None or k in self.fields}


OPTION_SETS: dict[str, OptionSet] = {
    "request": OptionSet(
        "The Screenwriter's options",
        "mangaka/screenplay/options.py",
        REQUEST_OPTIONS,
        "`auto` counts from the chapter on the command line; the node has its `auto_counts` input for that.",
    ),
    "load": OptionSet("Load LLM's options", "mangaka/llm/options.py", LOAD_OPTIONS),
    "run": OptionSet(
        "Load LLM's run options",
        "mangaka/llm/options.py",
        RUN_OPTIONS,
        "How the loaded model is run (`RunOptions`), not how it is loaded.",
    ),
    "page": OptionSet(
        "Compose Page's options",
        "mangaka/page/options.py",
        PAGE_OPTIONS,
        "The command line's `--width`/`--height` are unset unless `--page custom`.",
    ),
    "book": OptionSet("The book's options", "mangaka/batch/options.py", BOOK_OPTIONS),
    "video": OptionSet(
        "The motion comic's options",
        "mangaka/video/options.py",
        VIDEO_OPTIONS,
        "Timing (reading speeds, shot lengths, pauses, camera) and drawing (size, frame rate, subtitles, "
        "music).",
    ),
}

_BOOK_ONLY = {"chapters": None}

# In the order each command's --help lists them.
COMMANDS: dict[str, tuple[Shown, ...]] = {
    "write": (Shown("load"), Shown("run"), Shown("request")),
    "read": (Shown("request", ("language",)),),
    "demo": (
        Shown("load"),
        Shown("run"),
        Shown("request", defaults={"panels": 4, "dialogue": 6}),
    ),
    "bench": (Shown("load", ("n_gpu_layers", "n_threads"), {"n_gpu_layers": 0}),),
    "page": (Shown("page", defaults={"width": None, "height": None}),),
    "doctor": (Shown("load", ("n_ctx",)),),
    "book": (
        Shown("load"),
        Shown("run"),
        Shown("request"),
        Shown("book", ("chapters", "concurrency"), _BOOK_ONLY),
    ),
    "queue": (Shown("book", ("chapters", "max_chars"), _BOOK_ONLY),),
    "video": (Shown("video"),),
    "eval": (
        Shown("load"),
        Shown("run"),
        Shown(
            "request",
            defaults={"panels": None, "dialogue": None},
            unset="default: the chapter's reference screenplay's count, else auto",
        ),
    ),
}

NODES: dict[str, tuple[str, ...]] = {  # a set → the nodes that show its declared widgets
    "request": ("MangakaScreenwriter", "MangakaSeriesCast"),
    "load": ("MangakaLoadLLM", "MangakaDoctor"),
    "run": ("MangakaLoadLLM",),
    "page": ("MangakaComposePage", "MangakaPreviewLayout", "MangakaSaveManga"),
    "book": ("MangakaSplitChapters", "MangakaRemoteLLM"),
    "video": ("MangakaMotionComic",),
}


def shown_on(command: str) -> tuple[Shown, ...]:
    """The sets ``command`` shows (none for a command without declared options)."""
    return COMMANDS.get(command, ())


def commands_showing(key: str) -> list[tuple[str, Shown]]:
    """The commands that show set ``key``, in the registry's order, each with how."""
    return [(c, s) for c, sets in COMMANDS.items() for s in sets if s.set == key]
