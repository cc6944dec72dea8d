"""The reading of a chapter as a file: what the pack read, shown before any model runs, and what a
person corrects and passes back.

``reading_json(map)`` is the file ``python -m mangaka read chapter.txt --json`` writes (and the
Screenwriter node's report shows): the language, the title (the chapter's heading), paragraphs and
scenes, every quote with its kind, speaker, evidence and whether the text is sure, and the names
with their aliases and counts. The chapter's SHA-256 ties the file to its chapter.

``corrections(data, map)`` reads such a file back (``write --reading FILE``, the node's
``reading`` input). What a person may change, and what it does:

- a quote's ``speaker``: a name (one of ``names``, or a new one) is forced in the script call
  (evidence ``person``); ``null`` leaves the line to the model;
- ``names``: the cast the chapter names, in order (remove a word taken for a name, add a person the
  rules missed); the cast call writes exactly these;
- ``title``: forced as the screenplay's title (``null``: the model writes one).

Anything else is read, not changed. A file of another chapter, of another language, with unknown
quote numbers, a quote text that is not the chapter's, or of the wrong shape is refused, naming
the field and the fix; nothing is guessed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import MAX_TITLE, Quote, SourceMap, is_separator, source_map
from .speakers import MAX_NAME_CHARS, MAX_NAMES, NameCandidate, aliases_en

READING_VERSION = 1
MAX_READING_BYTES = 16 * 1024 * 1024


def chapter_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def scenes(m: SourceMap) -> list[tuple[int, int]]:
    """The chapter's scenes as paragraph ranges (1-based, inclusive): a scene ends before a line of
    separator marks (``***``) or two blank lines; the separators belong to no scene."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for k, p in enumerate(m.paragraphs, 1):
        if is_separator(m.text[p.start : p.end]):
            if start is not None:
                out.append((start, k - 1))
            start = None
            continue
        if p.hard_break_before and start is not None:
            out.append((start, k - 1))
            start = None
        start = start or k
    if start is not None:
        out.append((start, len(m.paragraphs)))
    return out


def _quote(m: SourceMap, q: Quote) -> dict[str, Any]:
    return {
        "number": q.number,
        "paragraph": m.units[q.unit - 1].paragraph + 1,
        "text": q.text,
        "kind": q.kind,
        "speaker": q.hint,
        "evidence": q.evidence,
        "sure": q.sure,
    }


def reading_json(m: SourceMap) -> dict[str, Any]:
    """The reading of a chapter's source map, as the file (module docstring) holds it."""
    return {
        "reading": READING_VERSION,
        "chapter": {"sha256": chapter_sha256(m.text), "characters": len(m.text)},
        "language": m.language,
        "title": m.title,
        "paragraphs": len(m.paragraphs),
        "scenes": [{"first_paragraph": a, "last_paragraph": b} for a, b in scenes(m)],
        "quotes": [_quote(m, q) for q in m.quotes],
        "names": [
            {
                "name": c.name,
                "aliases": aliases_en(c.name),
                "mentions": c.mentions,
                "attributed": c.attributed,
            }
            for c in m.names
        ],
    }


def reading_text(m: SourceMap) -> str:
    """The reading as a person reads it: one line a quote, ``?`` where the text leaves it open."""
    data = reading_json(m)
    lines = [
        f"language: {m.language}",
        f"title: {m.title or '(none: the model writes one)'}",
        f"paragraphs: {data['paragraphs']}, scenes: {len(data['scenes'])}",
        "names: " + (", ".join(f"{c.name} ({c.mentions})" for c in m.names) or "(none found)"),
        f"quotes: {len(m.quotes)} ({sum(q.sure for q in m.quotes)} with a speaker the text settles)",
    ]
    for q in data["quotes"]:
        who = q["speaker"] or ("?" if q["kind"] == "speech" else "-")
        why = f"{q['evidence']}, {'sure' if q['sure'] else 'a guess'}" if q["speaker"] else "open"
        why = why if q["kind"] == "speech" else f"{q['kind']}, not speech"
        text = " ".join(q["text"].split())
        text = text if len(text) <= 60 else text[:59] + "…"
        lines.append(f"  {q['number']:>3} ¶{q['paragraph']:<3} {who} [{why}]: {text}")
    return "\n".join(lines)


def reading_summary(text: str, language: str, corrected: Corrections | None = None) -> str:
    """One line: what the pack read of a chapter (its title, names and how many speakers the text
    settles), before a model runs."""
    m = source_map(text, language)
    if corrected is not None:
        m = corrected.apply(m)
    sure = sum(q.sure for q in m.quotes)
    names = ", ".join(c.name for c in m.names) or "nobody the rules recognise"
    title = f"title {m.title!r}" if m.title else "no heading (the model writes the title)"
    return f"{title}; {len(m.quotes)} quoted lines, {sure} with the speaker the text gives; names: {names}"


# ---- a person's corrections ----


@dataclass(frozen=True)
class Corrections:
    """What a person changed in a reading: quote number → speaker (a name, or None: open), the cast's
    names (None: unchanged), the title (None: the model writes one)."""

    speakers: Mapping[int, str | None]
    names: tuple[str, ...] | None
    title: str | None

    def apply(self, m: SourceMap) -> SourceMap:
        """``m`` with the corrections: a changed speaker is forced (``person``), the names replace
        the candidates, the title replaces the heading."""
        quotes = []
        for q in m.quotes:
            if q.number in self.speakers and self.speakers[q.number] != q.hint:
                who = self.speakers[q.number]
                q = dataclasses.replace(q, hint=who, evidence="person" if who else None, sure=who is not None)
            quotes.append(q)
        names = m.names
        if self.names is not None:
            known = {c.name: c for c in m.names}
            names = tuple(known.get(n) or NameCandidate(n, 0, 0) for n in self.names)
        return dataclasses.replace(m, quotes=tuple(quotes), names=names, title=self.title)


def _fail(field: str, problem: str) -> InputError:
    return InputError(
        f"reading: {field}: {problem}; fix the file, or write it again with `python -m mangaka read "
        "CHAPTER --json -o FILE`"
    )


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(field, f"must be a name (text), got {value!r}")
    if len(value) > MAX_NAME_CHARS or any(ord(c) < 32 for c in value):
        raise _fail(field, f"{value[:80]!r} is not a name (at most {MAX_NAME_CHARS} characters, one line)")
    return value.strip()


def corrections(data: Any, m: SourceMap) -> Corrections:
    """A person's corrections from a reading file's ``data`` (parsed JSON) for chapter map ``m``
    (module docstring); ``InputError`` naming the field for anything unusable."""
    if not isinstance(data, dict) or data.get("reading") != READING_VERSION:
        raise _fail("reading", f"not a reading file (version {READING_VERSION} expected)")
    chapter = data.get("chapter")
    if not isinstance(chapter, dict) or chapter.get("sha256") != chapter_sha256(m.text):
        raise _fail("chapter.sha256", "this reading is of another chapter (or the chapter was edited)")
    if data.get("language") != m.language:
        raise _fail("language", f"{data.get('language')!r}, but the chapter is read as {m.language!r}")
    names = data.get("names")
    if not isinstance(names, list) or len(names) > MAX_NAMES:
        raise _fail("names", f"must be a list of at most {MAX_NAMES} names")
    cast = tuple(
        dict.fromkeys(
            _name(n.get("name") if isinstance(n, dict) else n, f"names[{i}].name")
            for i, n in enumerate(names)
        )
    )
    quotes = data.get("quotes")
    if not isinstance(quotes, list):
        raise _fail("quotes", "must be a list")
    by_number = {q.number: q for q in m.quotes}
    speakers: dict[int, str | None] = {}
    for i, item in enumerate(quotes):
        if (
            not isinstance(item, dict)
            or item.get("number") not in by_number
            or isinstance(item.get("number"), bool)
        ):
            raise _fail(f"quotes[{i}].number", f"not one of the chapter's quotes (1..{len(m.quotes)})")
        q = by_number[item["number"]]
        if item.get("text") != q.text:
            raise _fail(f"quotes[{i}].text", f"is not quote {q.number} of the chapter ({q.text[:40]!r})")
        who = item.get("speaker")
        speakers[q.number] = None if who is None else _name(who, f"quotes[{i}].speaker")
    title = data.get("title")
    if title is not None and (not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE):
        raise _fail("title", f"must be text of 1 to {MAX_TITLE} characters, or null")
    unnamed = sorted({w for w in speakers.values() if w and w not in cast})
    if unnamed:
        cast = cast + tuple(unnamed)  # a speaker a person named is in the cast
    return Corrections(speakers, cast, title)


def load_corrections(path: str | Path, m: SourceMap) -> Corrections:
    """``corrections`` of the reading file at ``path``; a missing or unreadable file is an
    ``InputError`` naming it."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_READING_BYTES:
            raise InputError(
                f"reading: {p} is larger than {MAX_READING_BYTES // 2**20} MiB; not a reading file"
            )
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"reading: {p} does not exist; write one with `python -m mangaka read CHAPTER --json`"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"reading: {p} is not UTF-8 JSON ({e}); give the file `read --json` wrote") from None
    except RecursionError:
        raise InputError(
            f"reading: {p} is nested too deeply to be a reading file; give the file `read --json` wrote"
        ) from None
    except OSError as e:
        raise InputError(f"reading: {p}: {e.strerror or e}") from None
    return corrections(data, m)
