"""The matchings the metrics stand on: cast to gold cast, chapter quotes to screenplay lines, and
the rank agreement of two orders. The definitions are in ``metrics.py``'s docstring."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import BackendMissingError
from ..names import name_match
from ..screenplay.models import NARRATOR, Line, Screenplay
from .goldset import GoldChapter

# A chapter quote and a screenplay line (or a run of merged quotes and a line) match when
# rapidfuzz's ``fuzz.ratio`` of their normalised texts (``quote_key``) reaches this (0 to 100).
# 85 lets a 40-character quote differ by about six characters (a changed word, a dropped clause
# end), and a 6-character one by none; a paraphrase does not match.
QUOTE_MATCH_THRESHOLD = 85.0
# A screenplay line may carry up to this many consecutive chapter quotes merged into one.
MAX_MERGED_QUOTES = 3


def quote_key(text: str) -> str:
    """NFKC, casefolded, every punctuation mark, symbol and space removed: how quotes compare.

    A text made of punctuation only ("……!?") keeps its marks (without spaces), so it is not empty.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(c for c in folded if unicodedata.category(c)[0] not in "PSZC")
    return kept or "".join(folded.split())


# ---- cast ----


def match_cast(screenplay: Screenplay, gold: GoldChapter) -> dict[str, str]:
    """Screenplay character id → gold character id, one-to-one, as many pairs as possible.

    A maximum bipartite matching (augmenting paths); each screenplay character tries its exact
    name matches before its containment matches, so an exact pair is kept where there is a choice.
    """
    cast = [c for c in screenplay.characters if c.id != NARRATOR]
    edges: dict[str, list[str]] = {}
    for c in cast:
        strength = {g.id: name_match(c.name, [g.name, *g.aliases], gold.language) for g in gold.characters}
        edges[c.id] = sorted((g for g, s in strength.items() if s), key=lambda g: -strength[g])
    owner: dict[str, str] = {}  # gold id → screenplay id

    def augment(sid: str, seen: set[str]) -> bool:
        for gid in edges[sid]:
            if gid in seen:
                continue
            seen.add(gid)
            if gid not in owner or augment(owner[gid], seen):
                owner[gid] = sid
                return True
        return False

    for c in cast:
        augment(c.id, set())
    return {sid: gid for gid, sid in owner.items()}


# ---- quotes ----


@dataclass(frozen=True)
class QuoteMatch:
    """Chapter quotes ``first..last`` (indices, inclusive) found in screenplay line ``line``."""

    first: int
    last: int
    line: Line
    score: float


def reading_order(screenplay: Screenplay) -> dict[str, int]:
    """Line id → its place in reading order: panels in order, each panel's lines in order; lines
    in no panel follow all the others, in the dialogue's order. A line listed twice keeps its first place."""
    order: dict[str, int] = {}
    for panel in screenplay.panels:
        for line_id in panel.dialogue:
            order.setdefault(line_id, len(order))
    for line in screenplay.dialogue:
        order.setdefault(line.id, len(order))
    return order


def match_quotes(quotes: Sequence[str], screenplay: Screenplay) -> list[QuoteMatch]:
    """Chapter quotes found in screenplay lines, one-to-one, sorted by quote.

    Every line (narration included) is a candidate for every quote and for every run of 2 to
    ``MAX_MERGED_QUOTES`` consecutive quotes (their keys joined); a candidate scores
    ``fuzz.ratio`` of the keys and counts from ``QUOTE_MATCH_THRESHOLD``. Candidates are taken
    greedily, best score first; on a tie, the one whose quote and line sit at the closer relative
    places (quote index / quotes, reading place / lines) first; a candidate is taken when its line
    is still free and none of its quotes is taken yet.
    """
    try:
        from rapidfuzz import fuzz
    except ImportError:
        raise BackendMissingError(
            "rapidfuzz is not installed, and the fidelity metrics compare quotes with it: "
            "pip install 'rapidfuzz>=3.9' (it is in the pack's requirements.txt)"
        ) from None
    keys = [quote_key(q) for q in quotes]
    place = reading_order(screenplay)
    n_quotes, n_lines = max(len(keys), 1), max(len(place), 1)
    candidates = []
    for line in screenplay.dialogue:
        line_key = quote_key(line.line)
        for first in range(len(keys)):
            for last in range(first, min(first + MAX_MERGED_QUOTES, len(keys))):
                joined = "".join(keys[first : last + 1])
                s = fuzz.ratio(joined, line_key, score_cutoff=QUOTE_MATCH_THRESHOLD)
                if s >= QUOTE_MATCH_THRESHOLD:
                    gap = abs(first / n_quotes - place[line.id] / n_lines)
                    key = (-s, gap, first, last - first, place[line.id])
                    candidates.append((key, QuoteMatch(first, last, line, s)))
    taken_lines: set[str] = set()
    taken_quotes: set[int] = set()
    found = []
    for _, m in sorted(candidates, key=lambda c: c[0]):
        span = set(range(m.first, m.last + 1))
        if m.line.id in taken_lines or span & taken_quotes:
            continue
        taken_lines.add(m.line.id)
        taken_quotes |= span
        found.append(m)
    return sorted(found, key=lambda m: m.first)


# ---- order ----


def order_agreement(pairs: Sequence[tuple[int, int]]) -> float | None:
    """How far two orders agree, in [0, 1]: ``(tau + 1) / 2`` with ``tau = (C - D) / (C + D)``.

    ``C`` and ``D`` count the concordant and discordant pairs among ``pairs`` (each item's place in
    one order, then in the other); a pair tied in either order counts in neither (Goodman and
    Kruskal's gamma), so two items drawn in one panel cost nothing. ``None`` with fewer than two
    items or no untied pair. O(n²), for a chapter's few dozen items.
    """
    concordant = discordant = 0
    for i, (a1, b1) in enumerate(pairs):
        for a2, b2 in pairs[i + 1 :]:
            sign = (a1 - a2) * (b1 - b2)
            concordant += sign > 0
            discordant += sign < 0
    if concordant + discordant == 0:
        return None
    return ((concordant - discordant) / (concordant + discordant) + 1) / 2
