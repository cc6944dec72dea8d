"""What several model-tier tests share: small load options and a prompt for the tiny models, a
three-chapter book, and how a book folder's screenplays are found."""

from __future__ import annotations

from pathlib import Path

from mangaka.llm.base import PRESETS
from mangaka.llm.inprocess import LoadOptions

GREEDY = PRESETS["greedy"]
# One thread: tiny models are dominated by thread synchronisation, and CI runs other work beside them.
SMALL = LoadOptions(n_ctx=1024, n_threads=1)
USER = [{"role": "user", "content": "Write the next panel."}]

BOOK = """The Salt Road

Chapter 1: The Well

Mara drew water from the village well at dawn. "The rope is fraying," she told the goat.

Chapter 2: The Stranger

Mara met a stranger called Ilse at the gate. "Is this the salt road?" Ilse asked. Mara nodded.

Chapter 3: The Market

Mara and Ilse walked to the market together. "Buy only what you can carry," Mara said.
"""


def screenplay_files(out: Path) -> dict[int, Path]:
    return {int(p.name[:2]): p for p in sorted(out.glob("[0-9]* *.json"))}
