"""The voice script: the timeline's lines for a text-to-speech tool, in the order they are heard.

Two forms. :func:`voice_script_csv` is a table (``line,speaker,name,emotion,voice,text``) for a
person or a script to read, and :func:`voice_script_text` the bare texts, one a line, which a TTS
node reads as a batch (one clip per line, in dialogue order). Each row's ``voice`` is the name the
series bible gives the speaker (``BibleCharacter.voice``, see :func:`voices_from_bible`).

Spreadsheet safety: a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or a carriage
return) would be read as a formula by Excel, LibreOffice or Google Sheets, so the CSV starts it
with a ``'`` (the usual guard against formula injection; a spreadsheet shows the quote, a line
that begins ``-`` reads ``'-``). The CSV file is written with a byte-order mark so spreadsheets
read it as UTF-8 (Python reads it with ``encoding="utf-8-sig"``).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from ..fileio import write_atomic
from ..screenplay.bible import SeriesBible
from .timeline import Timeline

CSV_COLUMNS = ("line", "speaker", "name", "emotion", "voice", "text")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def voice_rows(timeline: Timeline) -> list[dict[str, Any]]:
    """One row per cue in the order heard: ``line``, ``speaker``, ``name``, ``emotion``,
    ``voice``, ``text``, ``start`` (seconds) and ``seconds`` (the line's planned length)."""
    return [
        {
            "line": cue.line,
            "speaker": cue.speaker,
            "name": cue.name,
            "emotion": cue.emotion,
            "voice": cue.voice,
            "text": cue.text,
            "start": cue.start,
            "seconds": round(cue.end - cue.start, 3),
        }
        for cue in timeline.cues()
    ]


def guarded(cell: str) -> str:
    """``cell`` with a leading ``'`` where a spreadsheet would read it as a formula."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def voice_script_csv(timeline: Timeline) -> str:
    """The voice script as CSV: a header row ``line,speaker,name,emotion,voice,text``, then one row
    per cue; any text is safe (quoted as needed), and formula-like cells are guarded (module
    docstring)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(CSV_COLUMNS)
    for row in voice_rows(timeline):
        writer.writerow([guarded(str(row[column])) for column in CSV_COLUMNS])
    return out.getvalue()


def voice_script_text(timeline: Timeline) -> str:
    """The texts to speak, one line per cue in dialogue order (a text's line breaks and runs of
    spaces as one space): what a TTS node reads as a batch, one clip per line."""
    return "".join(" ".join(cue.text.split()) + "\n" for cue in timeline.cues())


def write_voice_script(timeline: Timeline, stem: Path) -> Path:
    """Write ``<stem>.voice.csv`` (UTF-8 with a byte-order mark) atomically; its path."""
    stem = Path(stem)
    return write_atomic(stem.parent / f"{stem.name}.voice.csv", "\ufeff" + voice_script_csv(timeline))


def voices_from_bible(bible: SeriesBible) -> dict[str, str]:
    """Each character's voice name by id, as the series bible gives it (characters without one
    left out): the ``voices`` of ``build_timeline``."""
    return {c.id: c.voice.strip() for c in bible.characters if c.voice.strip()}
