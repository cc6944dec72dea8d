"""The series bible: one cast for a whole book, and the one bible format of the pack.

A bible is JSON (``schemas/bible.schema.json``)::

    {"version": 1, "characters": [{"id": "lin", "name": "Lin Yue", "aliases": ["Lin"],
      "appearance": "…", "trigger": "lin_mgk", "notes": "", "first_chapter": 1, "edited": false}]}

The Screenwriter takes one (``write_screenplay(..., bible=…)``): the cast call is shown the known
characters with their ids, and a character it lists is mapped onto a known one when its name
equals a known name or alias once folded (NFKC, casefolded, whitespace runs as one space:
``names.name_match`` == 2), else when it reuses a known id; the known entry's name and appearance
are then the screenplay's. ``updated_with(screenplay, chapter)`` adds the chapter's new characters
(``first_chapter`` = that chapter). The rule for a person's edits: the engine never changes an
entry whose ``edited`` is true; on any other entry it only adds a name it has not seen as an
alias and fills a blank appearance or ``first_chapter``. It never rewrites an appearance, a
trigger or a note, so a hand edit of those is kept whether or not ``edited`` is set.

The character bible of earlier versions (``{"characters": [{"id", "name", "appearance",
"trigger"}]}`` or just the list, every field but ``id`` optional) still loads: unknown fields are
dropped with a warning, and an id outside the screenplay id pattern is made into one (``Lin Yue``
→ ``lin_yue``).
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from ..errors import InputError
from ..fileio import parse_json, read_text, write_atomic
from ..names import fold, name_match
from ..structured import json_path
from .models import ID_PATTERN, MAX_APPEARANCE, MAX_ID, MAX_NAME, NARRATOR, Character, Id, Screenplay
from .schema import SCHEMAS_DIR, contract_schema_text, write_contract_schema

log = logging.getLogger(__name__)

BIBLE_VERSION = 1
BIBLE_SCHEMA_FILE = "bible.schema.json"
MAX_ALIASES = 8
MAX_TRIGGER = 120
MAX_NOTES = 600
MAX_BIBLE_CHARACTERS = 500
LEGACY_FIELDS = ("id", "name", "appearance", "trigger")
EXAMPLE = '{"version": 1, "characters": [{"id": "lin", "name": "Lin", "appearance": "…"}]}'


def _text(max_length: int) -> StringConstraints:
    return StringConstraints(max_length=max_length)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME)]


class BibleCharacter(_Strict):
    """One person of the series, as every chapter's screenplay and image prompt shows them."""

    id: Id = Field(description="Stable lowercase id, the same in every chapter; never 'narrator'.")
    name: Annotated[str, _text(MAX_NAME)] = Field("", description="The name the story uses most.")
    aliases: list[Name] = Field(
        default_factory=list, max_length=MAX_ALIASES, description="Other names the story uses for them."
    )
    appearance: Annotated[str, _text(MAX_APPEARANCE)] = Field(
        "", description="Canonical look: hair, eyes, build, clothing (for image prompts)."
    )
    trigger: Annotated[str, _text(MAX_TRIGGER)] = Field(
        "", description="LoRA trigger words put in front of the look ('' for none)."
    )
    voice: Annotated[str, _text(MAX_NAME)] = Field(
        "", description="A voice name for TTS tools (the voice script carries it); empty: none."
    )
    notes: Annotated[str, _text(MAX_NOTES)] = Field(
        "", description="Reference notes for artists (reference images, model sheets); not sent anywhere."
    )
    first_chapter: int | None = Field(None, ge=1, description="The chapter where they first appear.")
    edited: bool = Field(
        False, description="True once a person edited this entry: the engine leaves it as it is."
    )

    @property
    def names(self) -> list[str]:
        """The name and every alias ('' left out)."""
        return [n for n in (self.name, *self.aliases) if n.strip()]

    def as_character(self, fallback: Character | None = None) -> Character:
        """This entry as a screenplay character; a blank name or look is taken from ``fallback``."""
        name = self.name or (fallback.name if fallback else "") or self.id
        appearance = self.appearance if self.appearance.strip() else (fallback.appearance if fallback else "")
        return Character(id=self.id, name=name, appearance=appearance or name)


def bible_problems(characters: list[BibleCharacter]) -> list[str]:
    """Two entries with one id, or one name (folded) naming two entries; the narrator as an entry."""
    problems = []
    ids: dict[str, int] = {}
    owners: dict[str, int] = {}
    for i, c in enumerate(characters):
        if c.id == NARRATOR:
            problems.append(
                f"characters[{i}].id: 'narrator' is the caption voice, not a character; rename it"
            )
        if c.id in ids:
            j = ids[c.id]
            other = characters[j]
            if fold(other.name) == fold(c.name):
                problems.append(
                    f"characters[{i}]: {c.id!r} is listed twice (also characters[{j}]); keep one entry"
                )
            else:
                problems.append(
                    f"characters[{i}].id: {c.id!r} is already characters[{j}]'s id ({other.name!r}), "
                    f"here reused for {c.name!r}; an id belongs to one person: give this one another id"
                )
            continue
        ids[c.id] = i
        for name in dict.fromkeys(fold(n) for n in c.names):
            j = owners.setdefault(name, i)
            if j != i:
                problems.append(
                    f"characters[{i}]: the name {name!r} also names characters[{j}] ({characters[j].id!r}); "
                    "one name names one person: merge the two entries or remove the name from one"
                )
    return problems


class SeriesBible(_Strict):
    """The characters of a series: one id, one name and one look per person, across chapters."""

    version: Literal[1] = Field(BIBLE_VERSION, description="Format version of this file.")
    characters: list[BibleCharacter] = Field(default_factory=list, max_length=MAX_BIBLE_CHARACTERS)

    @model_validator(mode="after")
    def _one_entry_per_person(self) -> SeriesBible:
        problems = bible_problems(self.characters)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def __len__(self) -> int:
        return len(self.characters)

    def character(self, character_id: str) -> BibleCharacter | None:
        return next((c for c in self.characters if c.id == character_id), None)

    def find(self, name: str, character_id: str = "", language: str = "en") -> BibleCharacter | None:
        """The entry ``name`` names (its name or an alias, folded), else the one with ``character_id``."""
        return _find(self.characters, name, character_id, language)

    def listing(self) -> str:
        """One line per known character, as the cast call is shown them."""
        lines = []
        for c in self.characters:
            others = f" (also {', '.join(c.aliases)})" if c.aliases else ""
            look = " ".join(c.appearance.split())
            lines.append(f"- {c.id}: {c.name or c.id}{others}" + (f" — {look}" if look else ""))
        return "\n".join(lines)

    def map_cast(self, cast: list[Character], language: str = "en") -> tuple[list[Character], dict[str, str]]:
        """``cast`` with every known character replaced by its bible entry, and each id's new id.

        A known character listed twice is kept once; new characters keep their ids (a new id never
        equals a known one: reusing a known id means that character)."""
        out: dict[str, Character] = {}
        mapping: dict[str, str] = {}
        for c in cast:
            known = self.find(c.name, c.id, language)
            target = known.as_character(c) if known else c
            if known and known.id != c.id:
                log.info("bible: %r (%s) is the known %r", c.name, c.id, known.id)
            mapping[c.id] = target.id
            out.setdefault(target.id, target)
        return list(out.values()), mapping

    def remap(self, screenplay: Screenplay) -> Screenplay:
        """``screenplay`` with its cast mapped onto this bible and every reference rewritten."""
        cast, mapping = self.map_cast(list(screenplay.characters), screenplay.language)
        data = screenplay.model_dump(mode="json")
        data["characters"] = [c.model_dump(mode="json") for c in cast]
        for line in data["dialogue"]:
            line["speaker"] = mapping.get(line["speaker"], line["speaker"])
        for panel in data["panels"]:
            panel["characters"] = list(dict.fromkeys(mapping.get(i, i) for i in panel["characters"]))
        return Screenplay.model_validate(data)

    def updated_with(self, screenplay: Screenplay | list[Character], chapter: int) -> SeriesBible:
        """A new bible: this one with ``screenplay``'s (or a cast's) new characters added, first seen
        in ``chapter``. Edited entries are left as they are; others may gain an alias, a blank look
        or ``first_chapter``."""
        cast, language = (
            (list(screenplay.characters), screenplay.language)
            if isinstance(screenplay, Screenplay)
            else (list(screenplay), "en")
        )
        entries = {c.id: c for c in self.characters}
        for c in cast:
            known = _find(list(entries.values()), c.name, c.id, language)
            if known is None:
                entries[c.id] = BibleCharacter(
                    id=c.id, name=c.name, appearance=c.appearance, first_chapter=chapter
                )
            elif not known.edited:
                entries[known.id] = _learn(known, c, chapter, language)
        return SeriesBible(characters=list(entries.values()))

    def merged(self, other: SeriesBible) -> SeriesBible:
        """A new bible: this one with ``other``'s people added. An entry of ``other`` that this bible
        knows (by name or alias, else by id) is the known one, which may gain its names as aliases,
        a blank look or an earlier ``first_chapter`` (not when edited); the others come whole, their
        trigger, notes and ``edited`` flag included. For bibles of several chapters written from
        one starting bible (a book in one ComfyUI run)."""
        entries = {c.id: c for c in self.characters}
        for c in other.characters:
            known = next(
                (k for name in c.names if (k := _find(list(entries.values()), name, "", "en"))), None
            ) or entries.get(c.id)
            if known is None:
                entries[c.id] = c
            elif not known.edited and known != c:
                taken = {fold(n) for e in entries.values() if e.id != known.id for n in e.names}
                entries[known.id] = _absorb(known, c, taken)
        return SeriesBible(characters=list(entries.values()))

    def to_json(self) -> str:
        """The bible as its file holds it (2-space indent, trailing newline)."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"


def _find(
    characters: list[BibleCharacter], name: str, character_id: str, language: str
) -> BibleCharacter | None:
    if fold(name):
        for c in characters:
            if name_match(name, c.names, language) == 2:
                return c
    return next((c for c in characters if c.id == character_id), None) if character_id else None


def _learn(known: BibleCharacter, seen: Character, chapter: int, language: str) -> BibleCharacter:
    changes: dict[str, Any] = {}
    if not known.name:
        changes["name"] = seen.name
    elif name_match(seen.name, known.names, language) != 2 and len(known.aliases) < MAX_ALIASES:
        changes["aliases"] = [*known.aliases, seen.name]
    if not known.appearance.strip():
        changes["appearance"] = seen.appearance
    if known.first_chapter is None:
        changes["first_chapter"] = chapter
    return known.model_copy(update=changes) if changes else known


def _absorb(known: BibleCharacter, other: BibleCharacter, taken: set[str]) -> BibleCharacter:
    """``known`` with what another bible's entry for the same person adds (see ``merged``); a name
    in ``taken`` (folded: it names someone else) is not added."""
    changes: dict[str, Any] = {}
    names = [n for n in other.names if fold(n) not in taken and name_match(n, known.names, "en") != 2]
    if not known.name and names:
        changes["name"] = names.pop(0)
    room = MAX_ALIASES - len(known.aliases)
    if names and room > 0:
        changes["aliases"] = [*known.aliases, *names[:room]]
    if not known.appearance.strip() and other.appearance.strip():
        changes["appearance"] = other.appearance
    first = other.first_chapter
    if first is not None and (known.first_chapter is None or first < known.first_chapter):
        changes["first_chapter"] = first
    return known.model_copy(update=changes) if changes else known


# ---- loading and saving ----


def as_id(text: str) -> str:
    """``text`` made into a screenplay id: ``"Lin Yue"`` → ``"lin_yue"`` (``""`` when nothing is left)."""
    folded = unicodedata.normalize("NFKC", text).casefold().strip()
    slug = re.sub(r"[^a-z0-9_]+", "_", folded).strip("_")
    if slug and not slug[0].isalpha():
        slug = f"c_{slug}"
    return slug[:MAX_ID].rstrip("_")


def _legacy_entries(data: Any, source: str) -> list[dict[str, Any]]:
    """The entries of an earlier character bible, checked as before, migrated to this format."""
    if isinstance(data, dict) and "characters" in data:
        data = data["characters"]
    if not isinstance(data, list):
        raise InputError(
            f'{source}: expected {{"characters": [...]}} or a list of characters, got {type(data).__name__}; '
            f"e.g. {EXAMPLE}"
        )
    problems: list[str] = []
    entries = []
    for i, entry in enumerate(data):
        where = f"{source}: characters[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be an object with an id, got {type(entry).__name__}")
            continue
        if not isinstance(entry.get("id"), str) or not entry["id"].strip():
            problems.append(f"{where}.id: missing; every entry needs the character's id")
            continue
        for key in LEGACY_FIELDS[1:]:
            if key in entry and not isinstance(entry[key], str):
                problems.append(f"{where}.{key}: must be text, got {type(entry[key]).__name__}")
        unknown = sorted(set(entry) - set(BibleCharacter.model_fields))
        if unknown:
            log.warning("%s: ignored unknown fields %s", where, ", ".join(unknown))
        kept = {k: v for k, v in entry.items() if k in BibleCharacter.model_fields}
        if not re.match(ID_PATTERN, kept["id"]):
            kept["id"] = as_id(kept["id"]) or kept["id"]
            log.warning("%s: id %r is now %r (a-z, 0-9 and _)", where, entry["id"], kept["id"])
        entries.append(kept)
    if problems:
        raise InputError("\n".join(problems))
    return entries


def _validation_problems(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        msg = str(err["msg"]).removeprefix("Value error, ")
        where = json_path(err["loc"]) if err["loc"] else "(top level)"
        lines.append(f"{source}: {where}: {msg}")
    return "\n".join(lines) + f"\nfix the field named (the format: schemas/{BIBLE_SCHEMA_FILE})"


def series_bible_from_data(data: Any, *, source: str = "bible") -> SeriesBible:
    """A bible from parsed JSON: this format (with ``version``) or an earlier character bible."""
    if not (isinstance(data, dict) and "version" in data):
        data = {"version": BIBLE_VERSION, "characters": _legacy_entries(data, source)}
    try:
        return SeriesBible.model_validate(data)
    except ValidationError as exc:
        raise InputError(_validation_problems(exc, source)) from None


def parse_series_bible(text: str, *, source: str = "bible") -> SeriesBible:
    """A bible from JSON text; an empty bible for blank text. ``InputError`` names the field to fix."""
    if not text.strip():
        return SeriesBible()
    return series_bible_from_data(parse_json(text, source, f"expected e.g. {EXAMPLE}"), source=source)


def load_series_bible(path: str | Path, *, missing_ok: bool = False) -> SeriesBible:
    """The bible in ``path``; with ``missing_ok``, an empty bible when there is no such file."""
    path = Path(path)
    if missing_ok and not path.exists():
        return SeriesBible()
    if path.is_dir():
        raise InputError(
            f"bible file {path} is a folder; give a .json file (or a path where one may be made)"
        )
    return parse_series_bible(read_text(path, "bible file"), source=f"bible file {path.name}")


def save_series_bible(bible: SeriesBible, path: str | Path) -> Path:
    """Write ``bible`` to ``path`` atomically (a reader never sees half a bible)."""
    return write_atomic(Path(path), bible.to_json())


def bible_schema_text() -> str:
    """The exact text of ``schemas/bible.schema.json``."""
    return contract_schema_text(SeriesBible)


def write_bible_schema(folder: str | Path = SCHEMAS_DIR) -> Path:
    """Write ``bible.schema.json`` into ``folder`` (the pack's ``schemas/``); returns the file."""
    return write_contract_schema(bible_schema_text(), BIBLE_SCHEMA_FILE, folder)
