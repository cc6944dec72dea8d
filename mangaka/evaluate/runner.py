"""``python -m mangaka eval``: the Screenwriter over a gold set, scored, seeds × configurations.

A run is one configuration × one chapter × one seed. Each is written, as it finishes, to
``OUT/<config>/<chapter>.seed<N>.json`` (atomically: the scores, the cost, the error if the run
failed, the screenplay, and a fingerprint of everything that made it: the configuration, the
request, the chapter, its gold file). Running the same command again reuses every run whose
fingerprint still matches, so a long evaluation that stops (Ctrl-C, a crash, a reboot) resumes
where it was; a changed chapter, gold file or option runs again.

Each chapter is asked, in its own language, for ``--panels`` panels and ``--dialogue`` lines; a
count not given is the reference screenplay's (as many as it has), or ``auto`` (from the chapter,
as ``write --panels auto`` does) for a chapter without one. A run that fails after every
try (``InvalidOutputError``, ``GenerationError``, ``ContextOverflowError``) is kept as a failure:
it scores 0 on cast recall, cast drawn, quote recall and beat coverage, and counts against ``valid``.

``summarise`` gives, per configuration, each chapter's mean over its seeds and the set's mean
with its seed-to-seed spread (the standard deviation, over seeds, of the set's mean for that
seed); ``compare`` puts two configurations side by side with the difference and whether it is
larger than the spread (the larger of the two; undefined with one seed).
"""

from __future__ import annotations

import hashlib
import json
import logging
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ContextOverflowError, GenerationError, InvalidOutputError, MangakaError
from ..fileio import read_text, write_atomic
from ..llm.base import LLM
from ..screenplay import write_screenplay
from ..screenplay.grounded import name_ids
from ..screenplay.models import (
    MAX_CHARACTERS,
    MAX_DIALOGUE,
    MAX_PANELS,
    NARRATOR,
    SCREENPLAY_VERSION,
    Character,
    Line,
    Panel,
    Screenplay,
)
from ..screenplay.request import ScreenplayRequest
from ..screenplay.scenes import AUTO
from ..source import source_map
from .goldset import GoldCase
from .metrics import METRICS, RunCost, Scores, score

log = logging.getLogger(__name__)

# The figures summarised, in table order: the metrics, then the cost.
COST = ("valid", "tries", "repairs", "tokens", "seconds")
FIGURES = (*METRICS, *COST)
RESULT_VERSION = 1


@dataclass(frozen=True)
class EvalConfig:
    """One configuration: its name in tables and folders, the settings that describe it (model,
    LoRA, server, overrides: JSON-ready), the request every chapter starts from, and panel and
    dialogue counts (a number or ``auto``; None: the reference screenplay's, else ``auto``)."""

    name: str
    settings: dict[str, Any]
    request: ScreenplayRequest
    panels: int | str | None = None
    dialogue: int | str | None = None


@dataclass
class RunRecord:
    """One configuration × chapter × seed: its scores (``Scores.as_dict()``) and error, if any."""

    config: str
    chapter: str
    seed: int
    scores: dict[str, Any]
    error: str | None = None
    resumed: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"chapter": self.chapter, "seed": self.seed, "scores": self.scores, "error": self.error}


def case_request(config: EvalConfig, case: GoldCase, seed: int) -> ScreenplayRequest:
    """What ``config`` asks for ``case`` at ``seed``: the chapter's language, and the panel and
    dialogue counts the configuration sets; a count it leaves unset is the reference screenplay's
    when the chapter has one (read and checked here: ``InputError`` names it), else ``auto``."""
    panels, dialogue = config.panels, config.dialogue
    if (panels is None or dialogue is None) and case.reference_path is not None:
        reference = case.reference()
        panels = min(len(reference.panels), MAX_PANELS) if panels is None else panels
        dialogue = min(len(reference.dialogue), MAX_DIALOGUE) if dialogue is None else dialogue
    characters = max(config.request.max_characters, min(len(case.gold.characters), MAX_CHARACTERS))
    return replace(
        config.request,
        language=case.gold.language,
        panels=AUTO if panels is None else panels,
        dialogue=AUTO if dialogue is None else dialogue,
        max_characters=characters,
        seed=seed,
    )


def fingerprint(config: EvalConfig, case: GoldCase, request: ScreenplayRequest) -> str:
    """A hash of everything a run's result depends on that this pack knows of."""
    what = {
        "version": RESULT_VERSION,
        "settings": config.settings,
        "request": {k: str(v) for k, v in vars(request).items()},
        "chapter": case.text,
        "gold": case.gold.model_dump(mode="json"),
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def result_path(out: Path, config: EvalConfig, case: GoldCase, seed: int) -> Path:
    return out / config.name / f"{case.id}.seed{seed}.json"


def _resumed(path: Path, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(read_text(path, "eval result"))
    except (MangakaError, ValueError, RecursionError):
        return None  # not a result this run wrote: the case runs again and replaces it
    return data if isinstance(data, dict) and data.get("fingerprint") == key else None


def run_case(llm: LLM, case: GoldCase, request: ScreenplayRequest) -> tuple[Scores, str | None, dict | None]:
    """Write ``case``'s screenplay once and score it: (scores, error or None, screenplay JSON or None)."""
    started = time.monotonic()
    try:
        result = write_screenplay(llm, case.text, request)
    except (InvalidOutputError, GenerationError, ContextOverflowError) as exc:
        tries = len(exc.attempts) if isinstance(exc, InvalidOutputError) else None
        cost = RunCost(valid=False, tries=tries, seconds=time.monotonic() - started)
        return score(case.text, case.gold, None, cost), f"{type(exc).__name__}: {exc}", None
    cost = RunCost(
        valid=True,
        tries=len(result.attempts),
        repairs=len(result.repairs),
        tokens=result.usage.completion_tokens,
        seconds=time.monotonic() - started,
    )
    screenplay = result.screenplay
    return score(case.text, case.gold, screenplay, cost), None, screenplay.model_dump(mode="json")


def reading_screenplay(text: str, language: str) -> Screenplay:
    """The screenplay the chapter's reading alone gives, no model: the names as the cast, every
    quoted line spoken by the reading's speaker (the narrator where it has none), one panel a
    paragraph with lines. ``eval --reading-only`` scores it: the baseline the model must beat."""
    m = source_map(text, language)
    ids = name_ids([c.name for c in m.names])
    cast = [
        Character(id=ids.get(c.name, f"c{k}"), name=c.name, appearance="as read")
        for k, c in enumerate(m.names, 1)
    ]
    by_name = {c.name: c.id for c in cast}
    lines, panels = [], []
    for line in m.lines:
        who = by_name.get(m.quote_of(line.number).hint or "", NARRATOR)
        lines.append(
            Line(id=f"d{line.number}", speaker=who, line=line.text, emotion="neutral", quote=line.quote)
        )
    groups: dict[int, list[str]] = {}
    for line in m.lines:
        groups.setdefault(line.unit, []).append(f"d{line.number}")
    for k, (unit, found) in enumerate(sorted(groups.items()), 1):
        shown = list(dict.fromkeys(d.speaker for d in lines if d.id in found and d.speaker != NARRATOR))
        action = m.unit_text(unit)[:200] or "-"
        panels.append(Panel(id=f"p{k}", shot="medium", angle="eye_level", action=action,
                            characters=shown[:4], expression="", background="-", lighting="", props=[],
                            dialogue=found[:12], source=[unit, unit]))  # fmt: skip
    empty = Panel(id="p1", shot="medium", angle="eye_level", action="-", characters=[], expression="",
                  background="-", lighting="", props=[], dialogue=[])  # fmt: skip
    nobody = [Character(id="someone", name="-", appearance="as read")]
    return Screenplay.model_construct(
        version=SCREENPLAY_VERSION, title=m.title or "-", language=language, characters=cast or nobody,
        dialogue=lines, panels=panels or [empty],
    )  # fmt: skip


def run_reading(case: GoldCase, request: ScreenplayRequest) -> tuple[Scores, str | None, dict | None]:
    """``run_case`` without a model: the reading's own screenplay (``reading_screenplay``), scored."""
    started = time.monotonic()
    screenplay = reading_screenplay(case.text, request.language)
    cost = RunCost(valid=True, tries=0, repairs=0, tokens=0, seconds=time.monotonic() - started)
    return score(case.text, case.gold, screenplay, cost), None, screenplay.model_dump(mode="json")


@dataclass
class Progress:
    """Logs one line per finished run with a bar: ``eval [███░░░] 3/18 a en1 seed 1: …``."""

    total: int
    done: int = 0
    width: int = 20

    def __call__(self, record: RunRecord, summary: str) -> None:
        self.done += 1
        filled = self.width * self.done // max(self.total, 1)
        bar = "█" * filled + "░" * (self.width - filled)
        how = "resumed" if record.resumed else "failed" if record.error else "done"
        log.info(
            "eval [%s] %d/%d %s %s seed %d %s: %s",
            bar, self.done, self.total, record.config, record.chapter, record.seed, how, summary,
        )  # fmt: skip


def run_config(
    llm: LLM | None,
    config: EvalConfig,
    cases: Sequence[GoldCase],
    seeds: Sequence[int],
    out: Path,
    progress: Callable[[RunRecord, str], None],
) -> list[RunRecord]:
    """Every chapter × seed of one configuration, each saved as it finishes (or resumed); with no
    ``llm``, the reading's own screenplay (``run_reading``)."""
    records = []
    for case in cases:
        for seed in seeds:
            request = case_request(config, case, seed)
            key = fingerprint(config, case, request)
            path = result_path(out, config, case, seed)
            if (kept := _resumed(path, key)) is not None:
                record = RunRecord(config.name, case.id, seed, kept["scores"], kept.get("error"), True)
            else:
                scores, error, screenplay = (
                    run_case(llm, case, request) if llm else run_reading(case, request)
                )
                record = RunRecord(config.name, case.id, seed, scores.as_dict(), error)
                saved = {"fingerprint": key, "settings": config.settings, **record.as_dict()}
                text = json.dumps({**saved, "screenplay": screenplay}, ensure_ascii=False, indent=2)
                write_atomic(path, text + "\n")
            progress(record, Scores(**record.scores).summary())
            records.append(record)
    return records


# ---------------------------------------------------------------------------------- summaries


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return float(value)  # bools (valid) count 1 / 0


def _mean_spread(values_by_seed: dict[int, list[float]]) -> dict[str, float | None]:
    """The mean of every value, and the standard deviation over seeds of each seed's mean."""
    every = [v for values in values_by_seed.values() for v in values]
    if not every:
        return {"mean": None, "spread": None}
    per_seed = [statistics.fmean(v) for v in values_by_seed.values() if v]
    spread = statistics.stdev(per_seed) if len(per_seed) > 1 else None
    return {"mean": statistics.fmean(every), "spread": spread}


def _figures(records: Iterable[RunRecord]) -> dict[str, dict[str, float | None]]:
    by_figure: dict[str, dict[int, list[float]]] = {name: {} for name in FIGURES}
    for record in records:
        for name in FIGURES:
            value = _number(record.scores.get(name))
            seed_values = by_figure[name].setdefault(record.seed, [])
            if value is not None:
                seed_values.append(value)
    return {name: _mean_spread(values) for name, values in by_figure.items()}


@dataclass
class ConfigSummary:
    config: EvalConfig
    records: list[RunRecord]
    chapters: dict[str, dict[str, dict[str, float | None]]] = field(default_factory=dict)
    mean: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "settings": self.config.settings,
            "runs": [r.as_dict() for r in self.records],
            "failed": sum(1 for r in self.records if r.error),
            "chapters": self.chapters,
            "mean": self.mean,
        }


def summarise(config: EvalConfig, records: list[RunRecord]) -> ConfigSummary:
    chapters: dict[str, list[RunRecord]] = {}
    for record in records:
        chapters.setdefault(record.chapter, []).append(record)
    return ConfigSummary(
        config,
        records,
        chapters={chapter: _figures(rs) for chapter, rs in chapters.items()},
        mean=_figures(records),
    )


def compare(a: ConfigSummary, b: ConfigSummary) -> dict[str, dict[str, Any]]:
    """Per figure: both means, ``diff`` (b − a), the larger spread, and whether |diff| exceeds it."""
    table: dict[str, dict[str, Any]] = {}
    for name in FIGURES:
        x, y = a.mean[name]["mean"], b.mean[name]["mean"]
        spreads = [s for s in (a.mean[name]["spread"], b.mean[name]["spread"]) if s is not None]
        spread = max(spreads) if spreads else None
        diff = None if x is None or y is None else y - x
        exceeds = None if diff is None or spread is None else abs(diff) > spread
        table[name] = {"a": x, "b": y, "diff": diff, "spread": spread, "exceeds": exceeds}
    return table
