"""A screenplay tied to its chapter (``dialogue_from="chapter"``, the default): what the script
and cast calls may say, and how their replies become a screenplay.

The chapter's source map (``mangaka.source``) is read once per request; a call sees the part of
it that its scene covers (``Grounding``: a range of units). By construction:

- **dialogue** is the chapter's quoted lines, verbatim: the call's reply names each line by its
  number (a ``const`` when every quoted line is kept, so the grammar writes them all, in order) and
  gives only its speaker and emotion; the text comes from the map. The other lines are narrator
  captions in the model's words. A long quote is several consecutive lines (``SourceLine``);
- **panels** each start at a unit (``from``, a ``const``: the scene's units spread over its panels
  by length, ``panel_starts``), and each draws the units up to the next panel's start: together
  the panels cover the scene, in order (``Panel.source``). A quoted line goes to the panel whose
  units hold it, and its speaker is shown in that panel; so is each member of the cast that the
  narration of its units names (by name, bare name or the chapter's spelling of it);
- **speaker hints**: where the text says who speaks a line (``SourceMap`` hints), the grammar
  writes it as ``likely`` right before the model chooses the ``speaker``; the model decides;
- **the cast** is the people the chapter names (``SourceMap.names``: the speakers its
  attributions name, and the names it uses again and again), strongest first, at most
  ``max_characters``: the grammar writes each name (a ``const``) and, for a name with a Latin
  spelling, its id (``name_ids``); the model writes the other ids and each one's look. A series
  bible's entry is used for a name it knows. A chapter that names nobody the rules recognise gets
  a cast in the model's own words (with a warning).

Repairs (each logged as a repair of the call): panel starts that go back are sorted; a quoted line
chosen twice becomes the nearest line not chosen; lines chosen out of the chapter's order are
sorted. Problems sent back to the model (a server that ignores the schema's ``enum`` or ``const``):
a quoted line not in the call's part, a name the chapter never uses.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..names import fold, name_match
from ..repair import Repair
from ..source import SourceLine, SourceMap, narration, source_map
from ..source.speakers import bare_name
from .models import (
    MAX_CHARACTERS,
    MAX_ID,
    MAX_LINE,
    NARRATOR,
    SCREENPLAY_VERSION,
    Character,
    Line,
    Panel,
    Screenplay,
)
from .scenes import story_units
from .schema import grounded_script_call_schema

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Grounding:
    """The part of a chapter's source map that one call adapts: units ``first..last``."""

    map: SourceMap
    first: int
    last: int

    @classmethod
    def of(cls, chapter: str, language: str) -> Grounding:
        """The whole chapter (one call)."""
        m = source_map(chapter, language)
        return cls(m, 1, max(1, len(m.units)))

    def scene(self, first_paragraph: int, last_paragraph: int) -> Grounding:
        """The units of paragraphs ``first_paragraph..last_paragraph`` (a scene's)."""
        first, last = self.map.units_of_paragraphs(first_paragraph, last_paragraph)
        return Grounding(self.map, first, last)

    @property
    def units(self) -> tuple[int, int]:
        return self.first, self.last

    @property
    def lines(self) -> list[SourceLine]:
        return self.map.lines_in(self.first, self.last)

    def numbered_text(self) -> str:
        """The scene's text, each unit headed by its number: ``[3] Mei pushed open the door…``."""
        return "\n\n".join(f"[{n}] {self.map.unit_text(n)}" for n in range(self.first, self.last + 1))


# ---- the cast ----


def cast_names(grounding: Grounding, known: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """The names a cast may use (the chapter's candidates, then ``known`` ones: a bible's names and
    aliases) and the ones it lists (the chapter's candidates, strongest first); ``([], [])`` when
    the chapter names nobody."""
    candidates = [c.name for c in grounding.map.names]
    return list(dict.fromkeys([*candidates, *known])), candidates


def name_ids(names: Sequence[str]) -> dict[str, str]:
    """Ids for the names that have a Latin spelling (``the old man`` → ``old_man``, ``Mr. Hollis`` →
    ``mr_hollis``), unique, never the narrator's; a name without one (``沈青衣``) gets none: the model
    writes it."""
    ids: dict[str, str] = {}
    for name in names:
        ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
        slug = re.sub(r"[^a-z0-9]+", "_", ascii_name).strip("_")
        slug = re.sub(r"^(?:the|a|an)_", "", slug)[:MAX_ID]
        if not slug or not slug[0].isalpha() or len(slug) * 2 < len(name.replace(" ", "")):
            continue  # no Latin spelling (or only a fragment of one)
        base, n = slug, 1
        while slug in ids.values() or slug == NARRATOR:
            n += 1
            slug = f"{base[: MAX_ID - len(str(n)) - 1]}_{n}"
        ids[name] = slug
    return ids


def repair_ids(data: dict[str, Any]) -> tuple[dict[str, Any], list[Repair]]:
    """A named character given the narrator's id gets an id of its own (``character_N``)."""
    repairs, characters = [], []
    for i, c in enumerate(data["characters"]):
        if c["id"] == NARRATOR:
            new = f"character_{i + 1}"
            repairs.append(
                Repair(f"characters[{i}].id", f"{NARRATOR!r} is reserved for captions; now {new!r}")
            )
            c = {**c, "id": new}
        characters.append(c)
    return {**data, "characters": characters}, repairs


def name_problems(characters: list[dict[str, Any]], names: Sequence[str]) -> list[str]:
    """A cast name the chapter (and the bible) never uses, naming the ones it does."""
    allowed = {fold(n) for n in names}
    return [
        f"characters[{i}].name: {c['name']!r} is not a name this chapter uses; choose one of: "
        + ", ".join(names)
        for i, c in enumerate(characters)
        if fold(c["name"]) not in allowed
    ]


# ---- the script ----


def hint_id(hint: str | None, cast: Sequence[Character], language: str) -> str | None:
    """The cast id of a speaker hint (a name from the text), or ``None``."""
    if not hint:
        return None
    best = max(cast, key=lambda c: name_match(hint, [c.name], language), default=None)
    return best.id if best is not None and name_match(hint, [best.name], language) else None


def cast_forms(grounding: Grounding, cast: Sequence[Character], language: str) -> dict[str, list[str]]:
    """How the chapter writes each cast member (by id): the cast name, its bare form (``Mr.
    Hollis`` → ``Hollis``) and the chapter's name candidates that match it best (a bible name's
    alias as the text spells it); a candidate that matches two of them equally names neither."""
    forms: dict[str, list[str]] = {c.id: [c.name] for c in cast}
    for c in cast:
        bare = bare_name(c.name) if language == "en" else None
        if bare:
            forms[c.id].append(bare)
    for candidate in grounding.map.names:
        scores = [(name_match(candidate.name, [c.name], language), c.id) for c in cast]
        best = max((score for score, _ in scores), default=0)
        ids = [cid for score, cid in scores if score == best]
        if best and len(ids) == 1:
            forms[ids[0]].append(candidate.name)
    return {cid: list(dict.fromkeys(f for f in names if f.strip())) for cid, names in forms.items()}


def named_in(grounding: Grounding, first: int, last: int, forms: Mapping[str, Sequence[str]]) -> list[str]:
    """The cast ids the narration of units ``first..last`` names (outside quotes: one a line only
    speaks of is not there), in the order the text first names them. English names match as whole
    words, any case; Chinese and Japanese ones as they are written."""
    m = grounding.map
    start, end = m.units[first - 1].start, m.units[last - 1].end
    spans = [(q.start - start, q.end - start) for q in m.quotes if first <= q.unit <= last]
    outside = narration(m.text[start:end], spans)
    found: list[tuple[int, str]] = []
    for cid, names in forms.items():
        at = []
        for name in names:
            if m.language == "en":
                hit = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", outside, re.IGNORECASE)
                at += [hit.start()] if hit else []
            elif (i := outside.find(name)) >= 0:
                at.append(i)
        if at:
            found.append((min(at), cid))
    return [cid for _, cid in sorted(found)]


def quote_listing(
    grounding: Grounding, hints: Mapping[int, str], sure: Mapping[int, str] | None = None
) -> str:
    """The quoted lines of the call, one per line: number, unit, its speaker where the text is sure
    (``sure``: ``line_speakers``) else its likely one (``hints``: ``line_hints``), text."""
    out = []
    for line in grounding.lines:
        who = (sure or {}).get(line.number)
        part = f", part {line.part} of {line.parts}" if line.parts > 1 else ""
        hint = (
            f", speaker {who}" if who else (f", likely {hints[line.number]}" if line.number in hints else "")
        )
        out.append(f"- {line.number} [{line.unit}{part}{hint}]: {line.text}")
    return "\n".join(out) or "(none)"


def panel_starts(grounding: Grounding, panels: int) -> list[int]:
    """Where each of ``panels`` panels starts: the units spread over the panels by their length
    (story units: a CJK character counts 1, another letter a quarter), in order, the first at the
    first unit; with more panels than units, a long unit gets several panels."""
    numbers = list(range(grounding.first, grounding.last + 1))
    sizes = [max(1.0, story_units(grounding.map.unit_text(n))) for n in numbers]
    total = sum(sizes)
    starts, running, k = [], 0.0, 0
    for j in range(panels):
        target = total * j / panels
        while k + 1 < len(numbers) and running + sizes[k] <= target:
            running += sizes[k]
            k += 1
        starts.append(numbers[k])
    return starts


def line_hints(
    grounding: Grounding, cast: Sequence[Character], language: str, shown: bool = True
) -> dict[int, str]:
    """Each quoted line's likely speaker as a cast id, where the text says (``SourceMap`` hints);
    none when they are not ``shown`` (the request's ``speaker_hints`` off). The listing and the
    schema of a call both take them from here."""
    hints: dict[int, str] = {}
    if not shown:
        return hints
    for line in grounding.lines:
        who = hint_id(grounding.map.quote_of(line.number).hint, cast, language)
        if who:
            hints[line.number] = who
    return hints


def stored_panel(
    p: dict[str, Any], dialogue: list[str], characters: list[str], source: list[int] | None = None
) -> Panel:
    """The stored panel of a script reply's panel ``p``, with its lines, characters and source."""
    return Panel(
        id=p["id"],
        shot=p["shot"],
        angle=p["angle"],
        action=p["action"],
        characters=characters,
        expression=p["expression"],
        background=p["background"],
        lighting=p["lighting"],
        props=p["props"],
        dialogue=dialogue,
        source=source,
    )


def line_speakers(
    grounding: Grounding, cast: Sequence[Character], language: str, guesses: bool = False
) -> dict[int, str]:
    """Each quoted line's speaker as a cast id where the text is sure of it (``SourceMap``: an
    attribution, a beat, a resolved pronoun, the paragraph's turn; or a person's correction in a
    reading passed back), and with ``guesses`` (``speaker_guesses="force"``) where it guesses:
    forced in the call, whatever ``speaker_hints`` says."""
    sure: dict[int, str] = {}
    for line in grounding.lines:
        quote = grounding.map.quote_of(line.number)
        who = hint_id(quote.hint, cast, language) if quote.sure or guesses else None
        if who:
            sure[line.number] = who
    return sure


def script_schema(
    grounding: Grounding,
    cast_ids: list[str],
    panels: int,
    dialogue: int,
    hints: dict[int, str],
    sure: dict[int, str] | None = None,
) -> dict[str, Any]:
    """The grounded script call's schema for this part of the chapter (``schema.py`` builds it):
    ``sure`` speakers and the chapter's heading as its title are forced."""
    return grounded_script_call_schema(
        cast_ids,
        panels,
        grounding.units,
        [line.number for line in grounding.lines],
        dialogue,
        panel_starts(grounding, panels),
        hints,
        sure,
        grounding.map.title,
    )


# The prompt's own annotations (``[3]``, ``[3, likely mei]``, ``[2]–[5]``, ``[6`` cut short at a
# field's end): never a screenplay's words.
_ANNOTATION = re.compile(r"\s*\[\d+(?:\]–\[\d+)?(?:,[^\]\[\n]{0,80})?(?:\]|$)")
_ENUM_KEYS = frozenset({"id", "speaker", "likely", "panel", "shot", "angle", "emotion", "characters"})


def _strip(value: Any, path: str, repairs: list[Repair]) -> Any:
    if isinstance(value, str):
        clean = " ".join(_ANNOTATION.sub(" ", value).split()) if _ANNOTATION.search(value) else value
        if clean != value:
            repairs.append(Repair(path, f"{value!r} → {clean!r}: the prompt's annotation removed"))
        return clean
    if isinstance(value, dict):
        return {
            k: v if k in _ENUM_KEYS else _strip(v, f"{path}.{k}" if path else k, repairs)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_strip(v, f"{path}[{i}]", repairs) for i, v in enumerate(value)]
    return value


def strip_annotations(reply: dict[str, Any]) -> tuple[dict[str, Any], list[Repair]]:
    """Every string of a call's reply without the prompt's annotation syntax (``[3, likely mei]``):
    a small model copies it from the listing into a title or a caption. A field left empty by it is
    then a problem the validation sends back."""
    repairs: list[Repair] = []
    clean = _strip(reply, "", repairs)
    return (clean, repairs) if repairs else (reply, [])


def fill_empty_captions(script: dict[str, Any], grounding: Grounding) -> tuple[dict[str, Any], list[Repair]]:
    """A caption left with no words (a small model's caption that was only the prompt's annotation,
    ``[3, likely mei]``, removed by ``strip_annotations``) becomes its panel's own narration: the
    first unit the panel draws with any (``_nearest_narration``), its quoted lines left out, at most
    ``MAX_LINE`` characters."""
    starts = {p.get("id"): p.get("from") for p in script.get("panels", []) if isinstance(p, dict)}
    repairs: list[Repair] = []
    captions = []
    for i, c in enumerate(script.get("captions", [])):
        if isinstance(c, dict) and isinstance(c.get("line"), str) and not c["line"].strip():
            unit = starts.get(c.get("panel"))
            text = _nearest_narration(grounding, unit) if isinstance(unit, int) else ""
            if text:
                repairs.append(Repair(f"captions[{i}].line", f"empty → its panel's narration {text!r}"))
                c = {**c, "line": text}
        captions.append(c)
    return ({**script, "captions": captions}, repairs) if repairs else (script, [])


def _nearest_narration(grounding: Grounding, unit: int) -> str:
    """The narration of ``unit``, else of the nearest unit of the call's part that has some (a
    panel may start on a line of dialogue alone), after it first."""
    after = range(unit, grounding.last + 1)
    before = range(unit - 1, grounding.first - 1, -1)
    return next((t for u in (*after, *before) if (t := _narration_of(grounding.map, u))), "")


def _narration_of(m: SourceMap, unit: int) -> str:
    if not 1 <= unit <= len(m.units):
        return ""
    u = m.units[unit - 1]
    spans = [(q.start - u.start, q.end - u.start) for q in m.quotes if u.start <= q.start and q.end <= u.end]
    text = " ".join(narration(m.text[u.start : u.end], spans).replace("…", " ").split())
    text = re.sub(r"^[\W_]+|[\s,;:，、；：]+$", "", text)
    if len(text) > MAX_LINE:
        text = text[: MAX_LINE - 1].rstrip() + "…"
    return text


def repair_sure(
    script: dict[str, Any], sure: Mapping[int, str], title: str | None
) -> tuple[dict[str, Any], list[Repair]]:
    """What the text settles, set where a reply differs (a server that ignores ``const``, or a
    line picked by number): a sure line's speaker, the heading as the title."""
    repairs: list[Repair] = []
    lines = []
    for i, d in enumerate(script["dialogue"]):
        who = sure.get(d["quote"])
        if who and d["speaker"] != who:
            repairs.append(
                Repair(f"dialogue[{i}].speaker", f"{d['speaker']!r} → {who!r}: the chapter says so")
            )
            d = {**d, "speaker": who}
        lines.append(d)
    if title and script["title"] != title:
        repairs.append(Repair("title", f"{script['title']!r} → the chapter's heading {title!r}"))
        script = {**script, "title": title}
    return ({**script, "dialogue": lines}, repairs) if repairs else (script, [])


def panel_ranges(starts: Sequence[int], last: int) -> list[tuple[int, int]]:
    """Each panel's units from the panels' (sorted) starts: up to the next start, the last to ``last``."""
    ranges = []
    for j, start in enumerate(starts):
        end = last if j == len(starts) - 1 else max(start, starts[j + 1] - 1)
        ranges.append((start, end))
    return ranges


def repair_grounded(
    script: dict[str, Any], numbers: Sequence[int] = ()
) -> tuple[dict[str, Any], list[Repair]]:
    """Panel starts in chapter order; a quoted line chosen twice (when the model picks fewer lines
    than the chapter has) becomes the nearest line not chosen (``numbers``: the call's quoted
    lines; the next one after it first); quoted lines in chapter order. Never drops a line."""
    repairs: list[Repair] = []
    panels = script["panels"]
    starts = [p["from"] for p in panels]
    if starts != sorted(starts):
        repairs.append(Repair("panels[].from", f"starts {starts} sorted into chapter order"))
        panels = [{**p, "from": s} for p, s in zip(panels, sorted(starts), strict=True)]
    lines = [dict(d) for d in script["dialogue"]]
    chosen = {d["quote"] for d in lines}
    seen: set[int] = set()
    for i, d in enumerate(lines):
        if d["quote"] in seen and d["quote"] in numbers:
            free = [n for n in numbers if n not in chosen]
            if free:
                nearest = min(free, key=lambda n: (abs(n - d["quote"]), n < d["quote"]))
                repairs.append(
                    Repair(
                        f"dialogue[{i}].quote",
                        f"line {d['quote']} chosen again; now line {nearest}, the nearest not chosen",
                    )
                )
                d["quote"] = nearest
                chosen.add(nearest)
        seen.add(d["quote"])
    order = [d["quote"] for d in lines]
    if order != sorted(order):
        repairs.append(Repair("dialogue[].quote", f"lines {order} sorted into the chapter's order"))
        lines = sorted(lines, key=lambda d: d["quote"])
    if not repairs:
        return script, []
    return {**script, "panels": panels, "dialogue": lines}, repairs


def grounded_problems(script: dict[str, Any], grounding: Grounding) -> list[str]:
    """What only the model can fix: a quoted line chosen twice (or one not in this part)."""
    allowed = {line.number for line in grounding.lines}
    problems, seen = [], set()
    for i, d in enumerate(script["dialogue"]):
        if d["quote"] not in allowed:
            problems.append(f"dialogue[{i}].quote: {d['quote']} is not one of the quoted lines listed")
        elif d["quote"] in seen:
            problems.append(f"dialogue[{i}].quote: line {d['quote']} is already used; choose another one")
        seen.add(d["quote"])
    return problems


def assemble_grounded(
    script: dict[str, Any], cast: list[Character], language: str, grounding: Grounding
) -> Screenplay:
    """The stored screenplay from a valid grounded script reply: each panel's ``source`` from the
    starts; each quoted line in the panel holding its unit (lines of one unit shared in order by
    the panels that start there); captions first in their panel; ids in reading order. A panel
    shows the characters the model chose, its lines' speakers, and then the cast its units'
    narration names (``named_in``), up to ``MAX_CHARACTERS``."""
    panels = script["panels"]
    ranges = panel_ranges([p["from"] for p in panels], grounding.last)
    forms = cast_forms(grounding, cast, language)
    by_number = {line.number: line for line in grounding.lines}
    per_panel: list[list[tuple[str, Any]]] = [[] for _ in panels]
    for caption in script["captions"]:
        per_panel[[p["id"] for p in panels].index(caption["panel"])].append(("caption", caption))
    quoted = script["dialogue"]
    by_unit: dict[int, list[dict[str, Any]]] = {}
    for d in quoted:
        by_unit.setdefault(by_number[d["quote"]].unit, []).append(d)
    floor = 0  # a later unit's lines never go to an earlier panel
    for unit in sorted(by_unit):
        holders = [j for j, (a, b) in enumerate(ranges) if a <= unit <= b and j >= floor]
        holders = holders or [max(floor, max(j for j, (a, _) in enumerate(ranges) if a <= unit))]
        group = by_unit[unit]
        for k, d in enumerate(group):
            j = holders[k * len(holders) // len(group)]
            per_panel[j].append(("quote", d))
            floor = j
    lines: list[Line] = []
    stored: list[Panel] = []
    for j, p in enumerate(panels):
        speakers = [item["speaker"] for kind, item in per_panel[j] if kind == "quote"]
        chosen = list(dict.fromkeys([*p["characters"], *(s for s in speakers if s != NARRATOR)]))
        named = [cid for cid in named_in(grounding, *ranges[j], forms) if cid not in chosen]
        shown = chosen + named[: max(0, MAX_CHARACTERS - len(chosen))]
        ids = []
        for kind, item in sorted(per_panel[j], key=lambda x: x[0] != "caption"):
            ids.append(f"d{len(lines) + 1}")
            if kind == "caption":
                lines.append(Line(id=ids[-1], speaker=NARRATOR, line=item["line"], emotion="narration"))
            else:
                source = by_number[item["quote"]]
                lines.append(
                    Line(
                        id=ids[-1],
                        speaker=item["speaker"],
                        line=source.text,
                        emotion=item["emotion"],
                        quote=source.quote,
                    )
                )
        stored.append(stored_panel(p, ids, shown, list(ranges[j])))
    return Screenplay(
        version=SCREENPLAY_VERSION,
        title=script["title"],
        language=language,
        characters=cast,
        dialogue=lines,
        panels=stored,
    )
