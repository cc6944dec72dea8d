"""The engine's front door: ``mangaka``'s public names, and the README's Python example run as
written there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from PIL import Image

import mangaka
from mangaka.devtools.tiny_models import write_model
from mangaka.screenplay import Screenplay
from mangaka.source import find_quotes

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"


def readme_python_example() -> str:
    """The Python block under "From Python" in the README, exactly as written there."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.+?)\n```", section, re.S)
    assert block, "the README's 'From Python' section has no python block"
    return block.group(1)


def test_the_front_door_names_resolve_and_stay_light():
    """Every public name is there; importing the package alone loads none of them (llama_cpp and
    pydantic only when a name is used)."""
    for name in mangaka.__all__:
        assert getattr(mangaka, name) is not None, name
    assert issubclass(mangaka.InputError, mangaka.MangakaError)
    with pytest.raises(AttributeError, match="no attribute 'write_screenplays'"):
        mangaka.write_screenplays  # noqa: B018
    cold = subprocess.run(
        [sys.executable, "-c", "import sys, mangaka; print(sorted(m for m in ('llama_cpp', 'pydantic', "
         "'PIL') if m in sys.modules))"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert cold.stdout.strip() == "[]"


def test_the_readme_python_example_runs_as_written(tmp_path):
    """The example, unchanged, in a folder holding what it names: the tiny random-weight Qwen3.5-shaped
    model (trained context 32768, as the example asks for) under the README's file name, and a
    chapter. It writes a schema-valid screenplay that keeps every one of the chapter's quoted lines
    (verbatim, spacing aside: a quote that runs over a line break is lettered on one line), and
    storyboard pages."""
    code = readme_python_example()
    write_model(tmp_path / "Qwen3.5-35B-A3B-Q4_K_M.gguf", "qwen35moe", context_length=32768)
    chapter = CHAPTER.read_text(encoding="utf-8")
    (tmp_path / "chapter.txt").write_text(chapter, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads((tmp_path / "chapter.screenplay.json").read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "schemas" / "screenplay.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, schema)
    screenplay = Screenplay.model_validate(data)
    quotes = [" ".join(q.split()) for q in find_quotes(chapter, "en")]
    kept = [(line.quote, line.line) for line in screenplay.dialogue if line.quote is not None]
    assert all(text in quotes[number - 1] for number, text in kept), (kept, quotes)
    assert sorted({number for number, _ in kept}) == list(range(1, len(quotes) + 1))  # auto: all kept
    pages = sorted(tmp_path.glob("page_*.png"))
    assert pages and pages[0].name == "page_001.png"
    with Image.open(pages[0]) as page:
        assert page.size[0] > 1000 and page.size[1] > 1000
