"""The queue's state file (``OUT/queue-state.json``): what each chapter's run is, written whole
after every change, so a crash, a Ctrl-C or a server restart loses nothing.

A chapter is ``pending`` → ``submitted`` (with the ``prompt_id`` chosen before it is posted, and
its server) → ``done`` (its files downloaded) or ``failed`` (the server's error). On a rerun a
``submitted`` chapter is looked up on its server before anything is posted again: finished runs
are collected, running ones followed, and only runs the server no longer knows are resubmitted.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, MangakaError
from ..fileio import read_text, write_atomic

STATE_FILE = "queue-state.json"
VERSION = 1


@dataclass
class ChapterState:
    number: int
    title: str
    folder: str
    status: str = "pending"  # pending | submitted | done | failed
    server: str | None = None
    prompt_id: str | None = None
    client_id: str | None = None
    submissions: int = 0
    error: str | None = None
    files: list[str] = field(default_factory=list)
    seconds: float | None = None
    abandoned: list[str] = field(default_factory=list)  # prompt ids whose server stopped answering


@dataclass
class QueueState:
    path: Path
    book_sha256: str
    workflow_sha256: str
    chapters: dict[int, ChapterState]
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    def save(self) -> None:
        data: dict[str, Any] = {
            "version": VERSION,
            "book_sha256": self.book_sha256,
            "workflow_sha256": self.workflow_sha256,
            "created": self.created,
            "chapters": {str(n): asdict(c) for n, c in sorted(self.chapters.items())},
        }
        write_atomic(self.path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")

    @classmethod
    def open(
        cls, out: Path, book_sha256: str, workflow_sha256: str, chapters: list[ChapterState]
    ) -> QueueState:
        """The state in ``out``, or a new one; a state for another book or workflow is an error
        (it is never overwritten)."""
        path = out / STATE_FILE
        if not path.exists():
            state = cls(path, book_sha256, workflow_sha256, {c.number: c for c in chapters})
            state.save()
            return state
        unreadable = f"{path} is not a queue state this pack wrote"
        try:
            data = json.loads(read_text(path, "queue state file"))
        except MangakaError as exc:
            raise InputError(f"{exc}; move it away to start over") from None
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{unreadable} ({exc}); move it away to start over") from None
        if not isinstance(data, dict):
            raise InputError(f"{unreadable} (not a JSON object); move it away to start over")
        if data.get("book_sha256") != book_sha256 or data.get("workflow_sha256") != workflow_sha256:
            raise InputError(
                f"{path} belongs to another book or workflow; use another --out folder, or delete it to "
                "start this book over"
            )
        try:
            known = {int(n): ChapterState(**c) for n, c in dict(data.get("chapters", {})).items()}
        except (TypeError, ValueError) as exc:
            raise InputError(f"{unreadable} (its chapters: {exc}); move it away to start over") from None
        for chapter in chapters:
            known.setdefault(chapter.number, chapter)
        return cls(path, book_sha256, workflow_sha256, known, data.get("created", ""))
