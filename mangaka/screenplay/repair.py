"""The screenplay's repairs: what a model gets wrong that has one right fix (``mangaka.repair``).

- A character listed again under the same name (case and spacing folded) is merged into the
  first one, and every reference to the dropped id (speakers, panel characters) points to the
  kept one. An entry that is the narrator is left out of a cast (narration has its own speaker).
  A repeated id under another name gets a ``_2``, ``_3``… suffix in a cast (nothing refers to it
  yet); in a whole screenplay that id is ambiguous and stays a problem for validation.
- A character listed twice in one panel, a prop listed twice in one panel (folded), a line listed
  twice in one panel: listed once.

Each function takes schema-valid data, returns ``(data, repairs)`` and leaves its input unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

from ..repair import Repair, fold, merge_repeats
from .models import MAX_ID, NARRATOR


def _merge_characters(
    characters: list[dict[str, Any]], where: str
) -> tuple[list[dict[str, Any]], dict[str, str], list[Repair]]:
    """Characters merged by folded name, and the ids of the dropped entries → the kept ids.

    Blank names are never merged (validation reports them)."""
    kept, moved, repairs = merge_repeats(
        characters,
        lambda c: fold(c["name"]) or ("(blank)", id(c)),
        where,
        "character",
        lambda c: repr(c["name"]),
    )
    ids = {}
    for dropped, first in moved.items():
        old, new = characters[dropped]["id"], characters[first]["id"]
        if old != new:
            ids[old] = new
    return kept, ids, repairs


def repair_cast(data: dict[str, Any], where: str = "characters") -> tuple[dict[str, Any], list[Repair]]:
    """The cast call's reply with repeated names merged, narrators left out, repeated ids suffixed."""
    original = data["characters"]
    merged, _ids, repairs = _merge_characters(original, where)
    taken: set[str] = set()
    settled: list[dict[str, Any]] = []
    for c in merged:
        i = next(n for n, x in enumerate(original) if x is c)
        if c["id"] == NARRATOR or fold(c["name"]) == NARRATOR:
            why = f"left out {c['name']!r}: narration uses the reserved speaker {NARRATOR!r}"
            repairs.append(Repair(f"{where}[{i}]", why))
            continue
        cid, n = c["id"], 1
        while cid in taken:
            n += 1
            suffix = f"_{n}"
            cid = c["id"][: MAX_ID - len(suffix)] + suffix
        if cid != c["id"]:
            repairs.append(Repair(f"{where}[{i}].id", f"{c['id']!r} is another character's id; now {cid!r}"))
        taken.add(cid)
        settled.append({**c, "id": cid})
    return {**data, "characters": settled}, repairs


def _panel_lists(
    panels: list[dict[str, Any]], where: str = "panels"
) -> tuple[list[dict[str, Any]], list[Repair]]:
    repairs: list[Repair] = []
    fixed = []
    for j, p in enumerate(panels):
        p = dict(p)
        for field, what, key in (
            ("characters", "character", lambda x: x),
            ("props", "prop", fold),
            ("dialogue", "line", lambda x: x),
        ):
            if field in p:
                p[field], _moved, found = merge_repeats(p[field], key, f"{where}[{j}].{field}", what)
                repairs += found
        fixed.append(p)
    return fixed, repairs


def repair_script(script: dict[str, Any]) -> tuple[dict[str, Any], list[Repair]]:
    """The script call's reply with each panel's characters and props listed once."""
    panels, repairs = _panel_lists(script["panels"])
    return {**script, "panels": panels}, repairs


def repair_screenplay(data: dict[str, Any]) -> tuple[dict[str, Any], list[Repair]]:
    """A whole (schema-valid) screenplay with repeated characters merged and references remapped."""
    data = copy.deepcopy(data)
    characters, ids, repairs = _merge_characters(data["characters"], "characters")
    kept_ids = {c["id"] for c in characters}
    # A dropped entry whose id is still another kept character's id cannot be remapped safely.
    ids = {old: new for old, new in ids.items() if old not in kept_ids}
    data["characters"] = characters
    for i, d in enumerate(data["dialogue"]):
        if d["speaker"] in ids:
            repairs.append(
                Repair(f"dialogue[{i}].speaker", f"{d['speaker']!r} → {ids[d['speaker']]!r} (merged)")
            )
            d["speaker"] = ids[d["speaker"]]
    for j, p in enumerate(data["panels"]):
        for k, cid in enumerate(p["characters"]):
            if cid in ids:
                repairs.append(Repair(f"panels[{j}].characters[{k}]", f"{cid!r} → {ids[cid]!r} (merged)"))
                p["characters"][k] = ids[cid]
    data["panels"], found = _panel_lists(data["panels"])
    return data, repairs + found
