"""``python -m mangaka`` refuses a bad input before it loads the model, as a user runs it.

Each command runs in a fresh process with a real tiny model; the refusal must be the only error,
and no model load may be reported (the loader logs ``loaded …`` and the command ``model: …``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"
BOOK = ROOT / "prompts" / "samples" / "demo_book.en.txt"


def mangaka(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mangaka", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def assert_refused_before_loading(run: subprocess.CompletedProcess, message: str) -> None:
    assert run.returncode == 1, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and message in errors[0], run.stderr[-3000:]
    assert "model:" not in run.stderr and "mangaka.llm.inprocess: loaded" not in run.stderr
    assert "Traceback" not in run.stderr


CASES = {
    "panels 0": (["--panels", "0"], "--panels must be from 1 to 240, got 0"),
    "sampling bogus": (["--sampling", "bogus"], "choose one of: qwen3.5-instruct"),
    "ctx 0": (["--ctx", "0"], "--ctx must be from 512 to 262144"),
    "lora scale nan": (["--lora-scale", "nan"], "--lora-scale must be a number from -4 to 4"),
    "seed -1": (["--seed", "-1"], "--seed must be from 0"),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["write", "demo", "book"])
def test_a_bad_option_is_refused_before_the_model_loads(command, case, qwen35moe, tmp_path):
    extra, message = CASES[case]
    head = {
        "write": ["write", str(CHAPTER), "-o", str(tmp_path / "out.json")],
        "demo": ["demo", "-o", str(tmp_path / "out.json")],
        "book": ["book", str(BOOK), "-o", str(tmp_path / "book")],
    }[command]
    assert_refused_before_loading(mangaka(*head, "--model", str(qwen35moe), *extra), message)
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_chapter_of_punctuation_only_is_refused_before_the_model_loads(qwen35moe, tmp_path):
    chapter = tmp_path / "chapter.txt"
    chapter.write_text("……！？——“”「」。\n", encoding="utf-8")
    run = mangaka("write", str(chapter), "--model", str(qwen35moe))
    assert_refused_before_loading(run, "has no letters or digits")


def test_output_onto_the_chapter_is_refused_and_the_chapter_kept(qwen35moe, tmp_path):
    chapter = tmp_path / "chapter.txt"
    text = CHAPTER.read_text(encoding="utf-8")
    chapter.write_text(text, encoding="utf-8")
    run = mangaka("write", str(chapter), "--model", str(qwen35moe), "-o", str(chapter))
    assert_refused_before_loading(run, "would overwrite the chapter")
    assert chapter.read_text(encoding="utf-8") == text


def test_a_lora_folder_is_refused_before_the_model_loads(qwen35moe, tmp_path):
    run = mangaka("write", str(CHAPTER), "--model", str(qwen35moe), "--lora", str(tmp_path))
    assert_refused_before_loading(run, "is a folder, not a GGUF file; give the .gguf file inside it")


def test_book_concurrency_0_is_refused_before_the_model_loads(qwen35moe, tmp_path):
    run = mangaka(
        "book", str(BOOK), "--model", str(qwen35moe), "-o", str(tmp_path / "b"), "--concurrency", "0"
    )
    assert_refused_before_loading(run, "--concurrency must be from 1 to 64, got 0")
