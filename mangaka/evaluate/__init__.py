"""Screenplay fidelity against a gold chapter set: the set's format and loader, and the metrics.

``load_gold_set(BUILTIN_SET)`` gives the built-in chapters (``gold/``); ``score(chapter_text,
gold_or_None, screenplay, cost=None)`` gives a ``Scores``. The metric definitions are the docstring
of ``metrics.py``.
"""

from .goldset import (
    BUILTIN_SET,
    GOLD_SCHEMA_FILE,
    GoldBeat,
    GoldCase,
    GoldChapter,
    GoldCharacter,
    GoldQuote,
    gold_schema_text,
    load_gold_case,
    load_gold_set,
    write_gold_schema,
)
from .matching import QUOTE_MATCH_THRESHOLD, match_cast, match_quotes, order_agreement, quote_key
from .metrics import (
    METRICS,
    DialogueKept,
    RunCost,
    Scores,
    dialogue_kept,
    fidelity_report,
    panel_coverage,
    score,
)

__all__ = [
    "BUILTIN_SET",
    "GOLD_SCHEMA_FILE",
    "METRICS",
    "QUOTE_MATCH_THRESHOLD",
    "DialogueKept",
    "GoldBeat",
    "GoldCase",
    "GoldChapter",
    "GoldCharacter",
    "GoldQuote",
    "RunCost",
    "Scores",
    "dialogue_kept",
    "fidelity_report",
    "gold_schema_text",
    "load_gold_case",
    "load_gold_set",
    "match_cast",
    "match_quotes",
    "order_agreement",
    "panel_coverage",
    "quote_key",
    "score",
    "write_gold_schema",
]
