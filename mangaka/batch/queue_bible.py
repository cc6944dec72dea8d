"""The series bible of a queued book (``OUT/bible.json``, or ``--bible FILE``).

Before a chapter is posted, the bible as it stands goes into the workflow's Screenwriter (its
``bible`` input, and the chapter's number into ``chapter_number``) wherever those inputs are
typed values or left out; a ``bible`` linked to another node is left as it is. After a chapter is
collected, what it learned is merged in: the bible file Save Series Bible saved, or failing that
the screenplay Save Screenplay saved (its new characters, first seen in that chapter), and the
bible is written again atomically. The file is read afresh at the start of every run, so a
person's edits between two runs are kept (the rule is in ``screenplay/bible.py``: ``edited``
entries are never touched, no appearance is rewritten).

Order: one server runs the chapters in order, so each chapter is shown every earlier chapter's
people. With several servers a chapter is shown the people of the chapters collected before it
was posted; chapters running side by side may each add the same person under their own id.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

from ..errors import InputError, MangakaError
from ..fileio import read_text
from ..screenplay import SeriesBible, load_series_bible, parse_series_bible, save_series_bible
from ..screenplay.validate import load_screenplay

log = logging.getLogger(__name__)

BIBLE_FILE = "bible.json"
SCREENWRITER = "MangakaScreenwriter"
SAVE_BIBLE = "MangakaSaveSeriesBible"
SAVE_SCREENPLAY = "MangakaSaveScreenplay"
BIBLE_INPUT = "bible"
NUMBER_INPUT = "chapter_number"


def open_bible(path: Path) -> SeriesBible:
    """The book's bible in ``path`` (empty when there is none yet); ``InputError`` naming the file."""
    try:
        return load_series_bible(path, missing_ok=True)
    except InputError as exc:
        raise InputError(
            f"the book's bible {path} cannot be used; nothing was submitted:\n{exc}\n"
            "fix it, or move it away to start the bible over"
        ) from None


class QueueBible:
    """The bible of one queue run: put into each chapter's workflow, learned from its outputs."""

    def __init__(self, path: Path, prompt: dict[str, Any], object_info: dict[str, Any]) -> None:
        self.path = path
        self.bible = open_bible(path)
        inputs = _inputs_of(object_info.get(SCREENWRITER, {}))
        self.targets: dict[str, set[str]] = {}  # Screenwriter node → the inputs the queue fills
        for node_id, node in prompt.items():
            if node["class_type"] != SCREENWRITER:
                continue
            names = {NUMBER_INPUT} & inputs if not _linked(node["inputs"].get(NUMBER_INPUT)) else set()
            value = node["inputs"].get(BIBLE_INPUT)
            if BIBLE_INPUT not in inputs:
                log.warning(
                    "the Screenwriter on the server has no bible input (an older Mangaka): chapters are "
                    "written without the book's bible; update the pack on the server"
                )
            elif _linked(value):
                log.warning(
                    "node %s (Screenwriter): its bible input is linked to node %s, so the queue leaves it; "
                    "the book's bible %s reaches it only through that node",
                    node_id,
                    value[0],
                    path,
                )
            else:
                names.add(BIBLE_INPUT)
                if not len(self.bible) and isinstance(value, str) and value.strip():
                    # the workflow's own bible starts the book's (later, the book's file wins)
                    self.bible = parse_series_bible(value, source=f"node {node_id} (Screenwriter): bible")
            self.targets[node_id] = names
        kinds = {node["class_type"] for node in prompt.values()}
        self.learns = bool(kinds & {SAVE_BIBLE, SAVE_SCREENPLAY})
        if self.targets and not self.learns:
            log.warning(
                "the workflow saves neither a series bible nor a screenplay, so the book's bible %s does "
                "not learn new characters; add a Save Series Bible node after the Screenwriter's bible",
                path,
            )

    def into(self, prompt: dict[str, Any], number: int) -> dict[str, Any]:
        """``prompt`` with the bible and ``number`` in each Screenwriter input the queue fills."""
        out = copy.deepcopy(prompt)
        text = self.bible.to_json() if len(self.bible) else ""
        for node_id, names in self.targets.items():
            if BIBLE_INPUT in names:
                out[node_id]["inputs"][BIBLE_INPUT] = text
            if NUMBER_INPUT in names:
                out[node_id]["inputs"][NUMBER_INPUT] = number
        return out

    def learn(self, number: int, saved: list[tuple[str, Path]]) -> None:
        """Merge what chapter ``number`` learned from its saved files (``(node class, file)``):
        its bible files, else its screenplays; then write the bible file."""
        bibles = [p for kind, p in saved if kind == SAVE_BIBLE]
        screenplays = [p for kind, p in saved if kind == SAVE_SCREENPLAY]
        before = self.bible
        try:
            if bibles:
                for path in bibles:
                    text = read_text(path, "bible file")
                    self.bible = self.bible.merged(
                        parse_series_bible(text, source=f"chapter {number}: {path.name}")
                    )
            else:
                for path in screenplays:
                    screenplay = load_screenplay(read_text(path, "screenplay"), source=path.name)
                    self.bible = self.bible.updated_with(screenplay, number)
        except (MangakaError, ValueError) as exc:
            log.warning("chapter %d: its characters are not in the bible (%s)", number, exc)
            return
        if self.bible != before or not self.path.exists():
            save_series_bible(self.bible, self.path)
            added = len(self.bible) - len(before)
            log.info(
                "chapter %d: bible %s now has %d characters (%+d)", number, self.path, len(self.bible), added
            )


def _linked(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)


def _inputs_of(info: dict[str, Any]) -> set[str]:
    spec = info.get("input", {})
    return set(spec.get("required", {})) | set(spec.get("optional", {}))
