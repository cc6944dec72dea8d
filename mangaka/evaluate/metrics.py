"""Screenplay fidelity metrics: how much of a chapter a screenplay keeps, computed without a model.

``score(chapter_text, gold, screenplay, cost=None) -> Scores``. Every metric is a number from 0
to 1 (higher is better), or ``None`` where it is undefined (the reason is given with each). With
a gold file (``GoldChapter``, see ``goldset.py``) every metric is computed; without one
(``gold=None``) the chapter's spoken quotes are found by its quote marks (``source.spoken_quotes``) and
only quote recall and quote order are computed, the rest are ``None``.

Texts are compared after folding: Unicode NFKC, casefolded, whitespace runs as one space. The
narrator (speaker ``narrator``) is never a character.

- **cast recall**: matched gold characters / gold characters. **cast precision**: matched
  screenplay characters / screenplay characters (``None`` with none). A screenplay character
  matches a gold character when its folded name equals the gold name or one of its aliases, or
  when one of the two contains the other: as a whole word in English, as a substring of at least
  2 characters in Chinese and Japanese. Each character matches at most one (a maximum one-to-one
  matching; exact equality is preferred where there is a choice).
- **cast drawn**: gold characters whose matched screenplay character some panel shows (is in its
  ``characters``) / gold characters: the storyboard draws them, not only lists them.
- **quote recall**: recalled gold quotes / gold quotes. A quote is recalled when a screenplay line
  (narration included) has it with small edits: rapidfuzz's ``fuzz.ratio`` of the two texts with
  punctuation, symbols and spaces removed (after NFKC and casefolding) is at least
  ``QUOTE_MATCH_THRESHOLD`` (85 of 100). One line may carry up to ``MAX_MERGED_QUOTES`` (3)
  consecutive quotes merged into one (their texts joined are compared the same way); otherwise
  each line recalls at most one quote and each quote is recalled by at most one line. Candidates
  are taken best score first (ties: the pair at the closer relative places first). A quote split
  over two lines is not recalled.
- **speaker accuracy**: among recalled quotes whose gold speaker is known, the fraction whose
  line's speaker is the screenplay character matched (cast recall's matching) to that gold
  speaker. ``None`` when no recalled quote has a known speaker.
- **speaker forced** and **speaker open**: speaker accuracy on the gold quotes whose speaker the
  chapter's reading settles (``mangaka.source``: an attribution, a beat, a resolved pronoun, the
  paragraph's turn; forced in the script call, so high by construction: it measures the reading)
  and on the others (the model's own choice). **title exact**: 1 when the screenplay's title is
  the chapter's heading (forced: by construction), 0 when not, ``None`` for a chapter without one.
- **quote order** and **beat order**: the rank agreement between chapter order and screenplay
  order, ``(tau + 1) / 2`` with ``tau = (C - D) / (C + D)``, C and D the concordant and
  discordant pairs, pairs tied in either order left out (Goodman and Kruskal's gamma): 1 is the
  same order, 0 the reverse. Quote order ranks the recalled quotes by their line's place in
  reading order (panels in order, each panel's lines in order; merged quotes tie); beat order
  ranks the covered beats by the panel their keywords point to most (``beat_places``: a keyword
  counts 1/n in each of the n panels naming it; beats placed in one panel tie). ``None`` with
  fewer than two items or no untied pair.
- **beat coverage**: covered beats / beats. A beat is covered when one of its keywords (folded)
  is a substring of some panel's action, background, expression, lighting, props or the text of
  a line the panel carries (folded).
- **consistency** (on-panel): among non-narrator lines, the fraction whose speaker is in the
  ``characters`` of the first panel that carries the line; a line in no panel is inconsistent.
  ``None`` with no non-narrator line.
- **cost**, carried from the run when given (``RunCost``): ``valid`` (the screenplay passed
  validation), ``tries`` (model calls, retries included), ``repairs``, ``tokens`` (generated),
  ``seconds`` (wall time). A run that produced no screenplay is scored with ``screenplay=None``:
  recalls, cast drawn and coverage are 0, the other metrics ``None``.

``dialogue_kept(chapter_text, screenplay)`` is the no-gold quote check for a user's own chapter:
how many of its quoted lines the screenplay kept, and whether in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import NamedTuple

from ..errors import InputError
from ..screenplay.models import MAX_DIALOGUE, NARRATOR, Line, Panel, Screenplay
from ..source import source_map, spoken_quotes
from .goldset import GoldChapter, fold
from .matching import QuoteMatch, match_cast, match_quotes, order_agreement, quote_key, reading_order

# Below this share of a chapter's quoted lines, ``dialogue_kept`` warns.
KEPT_WARNING_SHARE = 0.5
# The metrics of ``Scores``, in order (each a float in [0, 1] or None).
METRICS = (
    "cast_recall",
    "cast_precision",
    "cast_drawn",
    "quote_recall",
    "speaker_accuracy",
    "speaker_forced",
    "speaker_open",
    "title_exact",
    "quote_order",
    "beat_coverage",
    "beat_order",
    "consistency",
)


@dataclass(frozen=True)
class RunCost:
    """What writing the screenplay cost; any field may be unknown (``None``)."""

    valid: bool | None = None
    tries: int | None = None
    repairs: int | None = None
    tokens: int | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Scores:
    """Every metric of one screenplay against one chapter (definitions: this module's docstring)."""

    cast_recall: float | None = None
    cast_precision: float | None = None
    cast_drawn: float | None = None
    quote_recall: float | None = None
    speaker_accuracy: float | None = None
    speaker_forced: float | None = None
    speaker_open: float | None = None
    title_exact: float | None = None
    quote_order: float | None = None
    beat_coverage: float | None = None
    beat_order: float | None = None
    consistency: float | None = None
    quotes_total: int = 0
    quotes_recalled: int = 0
    valid: bool | None = None
    tries: int | None = None
    repairs: int | None = None
    tokens: int | None = None
    seconds: float | None = None

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """Every field by name, in declaration order (JSON-ready)."""
        return asdict(self)

    def summary(self) -> str:
        """One line: quotes recalled, each defined metric as a percentage, then the known cost."""
        parts = [f"quotes {self.quotes_recalled}/{self.quotes_total}"] if self.quotes_total else []
        for name in METRICS:
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name.replace('_', ' ')} {value:.0%}")
        cost = [
            None if self.valid is None else "valid" if self.valid else "invalid",
            None if self.tries is None else f"{self.tries} tries",
            None if self.repairs is None else f"{self.repairs} repairs",
            None if self.tokens is None else f"{self.tokens} tokens",
            None if self.seconds is None else f"{self.seconds:.1f} s",
        ]
        known = [c for c in cost if c]
        text = ", ".join(parts) or "no metric defined"
        return f"{text}; {', '.join(known)}" if known else text


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def panel_text(screenplay: Screenplay, panel: Panel) -> str:
    """What a beat's keywords are looked for in: the panel's descriptions, props and lines, folded."""
    texts = [panel.action, panel.background, panel.expression, panel.lighting, *panel.props]
    texts += [line.line for line in screenplay.lines_of(panel)]
    return "\n".join(fold(t) for t in texts)


def beat_places(gold: GoldChapter, screenplay: Screenplay) -> list[int | None]:
    """For each gold beat, the panel its keywords point to most, or ``None`` when no panel mentions
    any. A keyword counts 1/n in each of the n panels that mention it, so a setting that recurs
    (the inn, the yard) says little about where the beat is and a detail seen once says much; the
    first panel wins a tie."""
    panels = [panel_text(screenplay, p) for p in screenplay.panels]
    places: list[int | None] = []
    for beat in gold.beats:
        weights = [0.0] * len(panels)
        for key in (fold(k) for k in beat.keywords):
            found = [i for i, text in enumerate(panels) if key in text]
            for i in found:
                weights[i] += 1.0 / len(found)
        best = max(weights, default=0.0)
        places.append(weights.index(best) if best > 0 else None)
    return places


def consistency(screenplay: Screenplay) -> float | None:
    """Non-narrator lines whose speaker is in the first panel carrying them, over all such lines."""
    carrier: dict[str, Panel] = {}
    for panel in screenplay.panels:
        for line_id in panel.dialogue:
            carrier.setdefault(line_id, panel)
    spoken = [line for line in screenplay.dialogue if line.speaker != NARRATOR]
    ok = sum(1 for line in spoken if line.id in carrier and line.speaker in carrier[line.id].characters)
    return _ratio(ok, len(spoken))


def cast_drawn(gold: GoldChapter, screenplay: Screenplay, cast: dict[str, str]) -> float | None:
    """Gold characters whose matched screenplay character (``cast``) a panel shows, over gold characters."""
    drawn = {cid for panel in screenplay.panels for cid in panel.characters}
    return _ratio(sum(1 for sid in cast if sid in drawn), len(gold.characters))


def quote_order(matches: list[QuoteMatch], screenplay: Screenplay) -> float | None:
    """Rank agreement of the recalled quotes' chapter order and their lines' reading order."""
    place = reading_order(screenplay)
    return order_agreement([(q, place[m.line.id]) for m in matches for q in range(m.first, m.last + 1)])


def speaker_accuracy(
    gold: GoldChapter,
    matches: list[QuoteMatch],
    cast: dict[str, str],
    only: Callable[[str], bool] | None = None,
) -> float | None:
    """Recalled quotes with a known gold speaker whose line's speaker maps to it, over all such
    quotes (``only``: those whose text it accepts)."""
    judged = right = 0
    for m in matches:
        for q in gold.quotes[m.first : m.last + 1]:
            if q.speaker is not None and (only is None or only(q.text)):
                judged += 1
                right += cast.get(m.line.speaker) == q.speaker
    return _ratio(right, judged)


def _reading_figures(
    chapter_text: str,
    gold: GoldChapter,
    screenplay: Screenplay,
    matches: list[QuoteMatch],
    cast: dict[str, str],
) -> dict[str, float | None]:
    """Speaker accuracy on the lines whose speaker the reading settles (forced: high by
    construction when the reading is right) and on the others (the model's own choice), and
    whether the title is the chapter's heading (where it has one)."""
    m = source_map(chapter_text, gold.language)
    sure = {quote_key(q.text) for q in m.quotes if q.sure}
    title = None if m.title is None else float(fold(screenplay.title) == fold(m.title))
    return dict(
        speaker_forced=speaker_accuracy(gold, matches, cast, lambda t: quote_key(t) in sure),
        speaker_open=speaker_accuracy(gold, matches, cast, lambda t: quote_key(t) not in sure),
        title_exact=title,
    )


def _cost(cost: RunCost | None) -> dict[str, object]:
    return asdict(cost) if cost is not None else {}


def _no_screenplay(quotes: int, gold: GoldChapter | None, cost: RunCost | None) -> Scores:
    with_gold = dict(cast_recall=0.0, cast_drawn=0.0, beat_coverage=0.0) if gold is not None else {}
    return Scores(quote_recall=0.0 if quotes else None, quotes_total=quotes, **with_gold, **_cost(cost))


def score(
    chapter_text: str, gold: GoldChapter | None, screenplay: Screenplay | None, cost: RunCost | None = None
) -> Scores:
    """Every metric of ``screenplay`` against its chapter (and ``gold``, when there is one).

    Without ``gold``, the quotes are the chapter's quoted spans in the screenplay's language and
    only quote recall and quote order are computed. ``screenplay=None`` scores a run that wrote
    nothing (see the module docstring); ``cost`` is copied into the result.
    """
    if gold is not None:
        quotes = [q.text for q in gold.quotes]
    elif screenplay is not None:
        quotes = spoken_quotes(chapter_text, screenplay.language)
    else:
        raise InputError("score: give a gold file or a screenplay, so the chapter's language is known")
    if screenplay is None:
        return _no_screenplay(len(quotes), gold, cost)
    matches = match_quotes(quotes, screenplay)
    recalled = sum(m.last - m.first + 1 for m in matches)
    scores = dict(
        quote_recall=_ratio(recalled, len(quotes)),
        quote_order=quote_order(matches, screenplay),
        quotes_total=len(quotes),
        quotes_recalled=recalled,
    )
    if gold is not None:
        cast = match_cast(screenplay, gold)
        n_cast = sum(1 for c in screenplay.characters if c.id != NARRATOR)
        places = beat_places(gold, screenplay)
        covered = [(i, p) for i, p in enumerate(places) if p is not None]
        scores |= dict(
            cast_recall=_ratio(len(cast), len(gold.characters)),
            cast_precision=_ratio(len(cast), n_cast),
            cast_drawn=cast_drawn(gold, screenplay, cast),
            speaker_accuracy=speaker_accuracy(gold, matches, cast),
            **_reading_figures(chapter_text, gold, screenplay, matches, cast),
            beat_coverage=_ratio(len(covered), len(places)),
            beat_order=order_agreement(covered),
            consistency=consistency(screenplay),
        )
    return Scores(**scores, **_cost(cost))


class DialogueKept(NamedTuple):
    """How many of a chapter's quoted lines a screenplay kept; unpacks as ``(kept, total, in_order)``."""

    kept: int
    total: int
    in_order: bool  # the kept lines are read in the chapter's order (True with fewer than two)

    @property
    def message(self) -> str:
        if not self.total:
            return "the chapter has no quoted lines"
        order = "in order" if self.in_order else "out of order"
        return f"kept {self.kept} of {self.total} quoted lines, {order}"

    @property
    def warning(self) -> str | None:
        """A warning when fewer than half the quoted lines were kept, else ``None``."""
        return self.advice("--dialogue")

    def advice(self, option: str) -> str | None:
        """``warning``, naming ``option`` as the place to ask for more lines (a flag, a widget)."""
        if not self.total or self.kept >= KEPT_WARNING_SHARE * self.total:
            return None
        return (
            f"the screenplay kept only {self.kept} of the chapter's {self.total} quoted lines: ask for "
            f"more dialogue lines ({option} {min(self.total, MAX_DIALOGUE)}) or use a larger model"
        )


def dialogue_kept(chapter_text: str, screenplay: Screenplay) -> DialogueKept:
    """The chapter's quoted lines (by its quote marks) that the screenplay kept, and whether in order.

    A screenplay whose lines record their quote (version 2, written from the chapter) is counted by
    those numbers (a quote lettered over several lines counts once); another by matching texts."""
    numbers = [line.quote for line in reading_lines(screenplay) if line.quote is not None]
    if numbers:
        total = sum(q.kind == "speech" for q in source_map(chapter_text, screenplay.language).quotes)
        return DialogueKept(len(set(numbers)), total, numbers == sorted(numbers))
    quotes = spoken_quotes(chapter_text, screenplay.language)
    matches = match_quotes(quotes, screenplay)
    order = quote_order(matches, screenplay)
    kept = sum(m.last - m.first + 1 for m in matches)
    return DialogueKept(kept, len(quotes), order is None or order == 1.0)


def reading_lines(screenplay: Screenplay) -> list[Line]:
    """The screenplay's lines in reading order (panels in order, each panel's lines in order)."""
    return [line for p in screenplay.panels for line in screenplay.lines_of(p)]


def panel_coverage(chapter_text: str, screenplay: Screenplay) -> str | None:
    """Which of the chapter's units the panels draw (``Panel.source``): ``"panels cover paragraphs
    1–9"``, naming the units no panel covers; ``None`` for a screenplay without sources."""
    ranges = [p.source for p in screenplay.panels if p.source]
    if not ranges:
        return None
    units = len(source_map(chapter_text, screenplay.language).units)
    covered = {u for a, b in ranges for u in range(a, b + 1)}
    missing = [u for u in range(1, units + 1) if u not in covered]
    text = (
        f"panels cover paragraphs 1–{units}"
        if not missing
        else f"panels cover {len(covered)} of {units} paragraphs"
    )
    if missing:
        text += "; no panel draws " + ", ".join(map(str, missing[:12])) + ("…" if len(missing) > 12 else "")
    return text


def fidelity_report(chapter_text: str, screenplay: Screenplay) -> str:
    """One line for a user: the quoted lines kept and the paragraphs the panels cover."""
    parts = [dialogue_kept(chapter_text, screenplay).message, panel_coverage(chapter_text, screenplay)]
    return "; ".join(p for p in parts if p)
