"""The gold chapter set: its pydantic models, its JSON Schema, and loading a folder of chapters.

A gold chapter ``<id>`` is two UTF-8 files in one folder, ``<id>.txt`` (the chapter) and
``<id>.gold.json`` (what a faithful adaptation keeps: ``GoldChapter``), and optionally a third,
``<id>.reference.json`` (a hand-written screenplay of it; every built-in chapter has one, and it
scores 1.0 on every metric). The bounds: 1 to 16 characters, 0 to 30 quotes of at most 120
characters, 1 to 10 beats of 2 to 4 keywords, so a scene of two characters and a line or two is
a chapter as well as a long one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from ..errors import InputError
from ..fileio import parse_json, read_text
from ..names import fold
from ..screenplay.models import (
    MAX_CHARACTERS,
    MAX_LINE,
    MAX_NAME,
    MAX_TITLE,
    NARRATOR,
    Id,
    Language,
    Screenplay,
)
from ..screenplay.schema import SCHEMAS_DIR, contract_schema_text, write_contract_schema
from ..screenplay.validate import load_screenplay

GOLD_VERSION = 1
GOLD_SCHEMA_FILE = "gold.schema.json"
BUILTIN_SET = Path(__file__).parent / "gold"

MIN_CHARACTERS = 1
MAX_ALIASES = 8
MIN_QUOTES, MAX_QUOTES = 0, 30
MIN_BEATS, MAX_BEATS = 1, 10
MIN_KEYWORDS, MAX_KEYWORDS = 2, 4
MAX_BEAT = 240
MAX_KEYWORD = 40

CHAPTER_SUFFIX, GOLD_SUFFIX, REFERENCE_SUFFIX = ".txt", ".gold.json", ".reference.json"


def _text(max_length: int) -> StringConstraints:
    return StringConstraints(min_length=1, max_length=max_length)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GoldCharacter(_Strict):
    """Someone who appears or speaks: the fullest name the text uses, and every other way it names them."""

    id: Id = Field(description="Lowercase id, e.g. 'old_man'; never 'narrator'.")
    name: Annotated[str, _text(MAX_NAME)] = Field(description="The name as the text writes it.")
    aliases: list[Annotated[str, _text(MAX_NAME)]] = Field(
        max_length=MAX_ALIASES, description="Other names, titles or fixed epithets used like a name."
    )


class GoldQuote(_Strict):
    """One quoted span of the chapter, verbatim (marks excluded), and who says it."""

    text: Annotated[str, _text(MAX_LINE)] = Field(description="Exactly the characters between the marks.")
    speaker: Id | None = Field(description="A character id, or null where the text does not say.")


class GoldBeat(_Strict):
    """One story beat, and words from the chapter that a panel drawing it would mention."""

    text: Annotated[str, _text(MAX_BEAT)] = Field(description="The beat, in one sentence.")
    keywords: list[Annotated[str, _text(MAX_KEYWORD)]] = Field(
        min_length=MIN_KEYWORDS, max_length=MAX_KEYWORDS, description="Verbatim words of the chapter."
    )


class GoldChapter(_Strict):
    """What a faithful screenplay of one chapter must keep: its cast, every quote, its beats."""

    version: Literal[1] = Field(description="Format version of this file.")
    id: Id = Field(description="The chapter's id, the files' common name, e.g. 'en1'.")
    language: Language
    title: Annotated[str, _text(MAX_TITLE)]
    characters: list[GoldCharacter] = Field(min_length=MIN_CHARACTERS, max_length=MAX_CHARACTERS)
    quotes: list[GoldQuote] = Field(min_length=MIN_QUOTES, max_length=MAX_QUOTES)
    beats: list[GoldBeat] = Field(min_length=MIN_BEATS, max_length=MAX_BEATS)

    @model_validator(mode="after")
    def _references(self) -> GoldChapter:
        problems = gold_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def character(self, character_id: str) -> GoldCharacter | None:
        return next((c for c in self.characters if c.id == character_id), None)


def gold_problems(gold: GoldChapter) -> list[str]:
    """What the schema cannot say: unique ids, no 'narrator', no shared alias, speakers in the cast."""
    problems = []
    ids = [c.id for c in gold.characters]
    for cid in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"characters: id {cid!r} is listed twice; give each character one entry")
    if NARRATOR in ids:
        problems.append(f"characters: {NARRATOR!r} is not a character id; leave the narrator out")
    owner: dict[str, str] = {}
    for c in gold.characters:
        for name in {fold(n) for n in (c.name, *c.aliases)}:
            if owner.setdefault(name, c.id) != c.id:
                problems.append(
                    f"characters: {name!r} names both {owner[name]!r} and {c.id!r}; keep it for one of them"
                )
    for i, q in enumerate(gold.quotes):
        if q.speaker is not None and q.speaker not in ids:
            problems.append(
                f"quotes[{i}]: speaker {q.speaker!r} is not a character id; use one of {ids} or null"
            )
    return problems


def gold_schema_text() -> str:
    """The exact text of ``schemas/gold.schema.json``."""
    return contract_schema_text(GoldChapter)


def write_gold_schema(folder: str | Path = SCHEMAS_DIR) -> Path:
    """Write ``gold.schema.json`` into ``folder`` (the pack's ``schemas/``); returns the file."""
    return write_contract_schema(gold_schema_text(), GOLD_SCHEMA_FILE, folder)


@dataclass(frozen=True)
class GoldCase:
    """One gold chapter: its text, its gold file parsed, and where its reference screenplay is
    (``None``: the chapter has none)."""

    text: str
    gold: GoldChapter
    chapter_path: Path
    gold_path: Path
    reference_path: Path | None

    @property
    def id(self) -> str:
        return self.gold.id

    def reference(self) -> Screenplay:
        """The reference screenplay, validated as written (no repairs); ``InputError`` names the file,
        or says the chapter has none."""
        if self.reference_path is None:
            raise InputError(
                f"gold chapter {self.id!r} has no reference screenplay; write "
                f"{self.chapter_path.with_name(self.id + REFERENCE_SUFFIX)} to compare with one"
            )
        text = read_text(self.reference_path, "reference screenplay")
        return load_screenplay(text, source=str(self.reference_path), repair=False)


def _read_json(path: Path) -> Any:
    return parse_json(read_text(path, "gold file"), f"gold file {path}", "fix the JSON")


def _validation_message(path: Path, error: ValidationError) -> str:
    lines = []
    for e in error.errors()[:20]:
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        lines.append(f"- {where}: {e['msg'].removeprefix('Value error, ')}")
    return (
        f"gold file {path} does not follow the gold format ({error.error_count()} problems):\n"
        + "\n".join(lines)
    )


def text_problems(text: str, gold: GoldChapter) -> list[str]:
    """Where the gold file disagrees with its chapter: quotes verbatim and in order, keywords present."""
    problems = []
    pos = 0
    for i, q in enumerate(gold.quotes):
        found = text.find(q.text, pos)
        if found < 0:
            where = (
                "is in the chapter but not after the quote before it; list the quotes in the text's order"
                if q.text in text
                else "is not in the chapter verbatim; copy it exactly (punctuation included, marks excluded)"
            )
            problems.append(f"quotes[{i}] {q.text!r} {where}")
            continue
        pos = found + len(q.text)
    folded = fold(text)
    for i, beat in enumerate(gold.beats):
        for k in beat.keywords:
            if fold(k) not in folded:
                problems.append(
                    f"beats[{i}]: keyword {k!r} is not in the chapter; use words the chapter itself uses"
                )
    return problems


def load_gold_case(folder: str | Path, case_id: str) -> GoldCase:
    """The chapter ``case_id`` of ``folder``; ``InputError`` names the file at fault and the fix."""
    folder = Path(folder)
    chapter_path, gold_path, reference_path = (
        folder / f"{case_id}{s}" for s in (CHAPTER_SUFFIX, GOLD_SUFFIX, REFERENCE_SUFFIX)
    )
    needs = (
        f"each chapter needs {case_id}{CHAPTER_SUFFIX} (the chapter) and {case_id}{GOLD_SUFFIX} "
        f"(its gold file, format: schemas/{GOLD_SCHEMA_FILE}); {case_id}{REFERENCE_SUFFIX} is optional"
    )
    for path in (chapter_path, gold_path):
        if not path.is_file():  # a folder or a FIFO is never opened
            raise InputError(
                f"gold chapter {case_id!r}: {path} is {'not a file' if path.exists() else 'missing'}; {needs}"
            )
    reference: Path | None = None
    if reference_path.exists() or reference_path.is_symlink():  # absent: the chapter has none
        if not reference_path.is_file():
            raise InputError(
                f"gold chapter {case_id!r}: {reference_path} is not a file; make it the chapter's "
                f"reference screenplay or remove it ({needs})"
            )
        reference = reference_path
    text = read_text(chapter_path, "gold chapter")
    try:
        gold = GoldChapter.model_validate(_read_json(gold_path))
    except ValidationError as e:
        raise InputError(_validation_message(gold_path, e)) from None
    problems = (
        [] if gold.id == case_id else [f"id {gold.id!r} differs from the file name; make it {case_id!r}"]
    )
    problems += text_problems(text, gold)
    if problems:
        listed = "\n".join(f"- {p}" for p in problems)
        raise InputError(f"gold file {gold_path} disagrees with {chapter_path.name}:\n{listed}")
    return GoldCase(text, gold, chapter_path, gold_path, reference)


def case_ids(folder: str | Path) -> list[str]:
    """The chapter ids in ``folder``: every name with a ``.txt``, ``.gold.json`` or ``.reference.json``."""
    ids = set()
    for path in Path(folder).iterdir():
        for suffix in (GOLD_SUFFIX, REFERENCE_SUFFIX, CHAPTER_SUFFIX):
            if path.name.endswith(suffix) and len(path.name) > len(suffix):
                ids.add(path.name[: -len(suffix)])
                break
    return sorted(ids)


def load_gold_set(folder: str | Path = BUILTIN_SET) -> list[GoldCase]:
    """Every gold chapter in ``folder``, sorted by id; ``InputError`` on the first file at fault."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            f"gold set {folder} is not a folder; give the folder that holds the <id>.gold.json files"
        )
    ids = case_ids(folder)
    if not ids:
        raise InputError(
            f"gold set {folder} holds no chapters; put <id>{CHAPTER_SUFFIX} and <id>{GOLD_SUFFIX} files "
            f"in it (and <id>{REFERENCE_SUFFIX}, optionally)"
        )
    return [load_gold_case(folder, i) for i in ids]
