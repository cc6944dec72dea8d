"""Chapters in the languages manga is adapted from, written as a user would: ``write`` with the
default options (no ``--language``: it is read from the text). The screenplay keeps the chapter's
language, heading, every spoken quote and the speakers the text settles; its cast is the chapter's
people. A Japanese, a Korean and a French chapter (dash dialogue) from the built-in gold set.

What is checked holds by construction (the reading is forced in the calls), so the model is the
tiny random-weight Qwen3.5-shaped one (seconds a chapter); what a real model adds is measured by
``eval`` (docs/evaluation.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mangaka.devtools.tiny_models import write_model
from mangaka.evaluate import dialogue_kept
from mangaka.evaluate.goldset import load_gold_case
from mangaka.names import name_match
from mangaka.screenplay import Screenplay, validate_screenplay
from mangaka.source import source_map

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "mangaka" / "evaluate" / "gold"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return write_model(
        tmp_path_factory.mktemp("tiny") / "qwen35moe-32k.gguf", "qwen35moe", context_length=32768
    )


@pytest.mark.parametrize("case_id", ["ja1", "ko1", "fr1"])
def test_a_chapter_written_with_the_default_options_keeps_its_quotes_cast_and_speakers(
    case_id, tmp_path, tiny_model
):
    case = load_gold_case(GOLD, case_id)
    out = tmp_path / f"{case_id}.json"
    run = subprocess.run(
        [sys.executable, "-m", "mangaka", "write", str(GOLD / f"{case_id}.txt"),
         "--model", str(tiny_model), "--dialogue", "auto", "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "no quoted lines" not in run.stderr and "names nobody" not in run.stderr, run.stderr[-2000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert validate_screenplay(data) == []
    screenplay = Screenplay.model_validate(data)
    assert screenplay.language == case.gold.language
    assert screenplay.title == case.gold.title
    kept = dialogue_kept(case.text, screenplay)
    assert kept.kept == kept.total == len(case.gold.quotes) and kept.in_order, kept.message
    cast = [c.name for c in screenplay.characters]
    found = [
        g
        for g in case.gold.characters
        if any(name_match(n, [g.name, *g.aliases], case.gold.language) for n in cast)
    ]
    assert len(found) * 2 >= len(case.gold.characters), (cast, [g.name for g in case.gold.characters])
    reading = source_map(case.text, case.gold.language)
    names = {c.id: c.name for c in screenplay.characters}
    for line in screenplay.dialogue:
        quote = reading.quotes[line.quote - 1] if line.quote else None
        if quote is not None and quote.sure:
            assert name_match(names[line.speaker], [quote.hint or ""], case.gold.language), (line, quote)
