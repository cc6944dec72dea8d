"""Screenplays end to end on real models: the command line, the tiny GGUFs with a LoRA, SmolLM2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from mangaka.devtools.tiny_models import write_lora, write_model
from mangaka.errors import InputError, InvalidOutputError
from mangaka.llm.base import PRESETS, CallContext
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions
from mangaka.screenplay import validate_screenplay, write_screenplay
from mangaka.screenplay.request import ScreenplayRequest
from mangaka.structured import generate_json

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "screenplay.schema.json").read_text())
CHAPTER = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"
ONE_THREAD = ["--threads", "1"]


def mangaka(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mangaka", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_valid_screenplay(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    assert validate_screenplay(data) == []
    return data


@pytest.fixture(scope="module")
def roomy_qwen35moe(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny qwen35moe trained for 32k tokens, so a whole screenplay's budget fits, and its LoRA."""
    folder = tmp_path_factory.mktemp("roomy")
    model = write_model(folder / "qwen35moe-32k.gguf", "qwen35moe", context_length=32768)
    return model, write_lora(folder / "qwen35moe-32k-lora.gguf", model)


def test_write_with_tiny_qwen35moe_and_its_lora(roomy_qwen35moe, tmp_path):
    model, lora = roomy_qwen35moe
    out = tmp_path / "chapter1.json"
    run = mangaka(
        "write", str(CHAPTER), "--model", str(model), "--lora", str(lora), *ONE_THREAD,
        "--panels", "3", "--dialogue", "4", "--sampling", "greedy", "--think", "24", "-o", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "LoRA qwen35moe-32k-lora.gguf at 1.0" in run.stderr
    assert re.search(r"kept \d+ of \d+ quoted lines, (in|out of) order", run.stderr), run.stderr
    data = assert_valid_screenplay(out)
    assert len(data["panels"]) == 3 and len(data["dialogue"]) == 4
    assert out.with_suffix(".thinking.txt").read_text(encoding="utf-8").strip()  # the plan, kept


def test_write_a_chapter_longer_than_a_tiny_context_says_no_scene_fits(roomy_qwen35moe, tmp_path):
    model, _ = roomy_qwen35moe
    chapter = tmp_path / "long.txt"
    chapter.write_text(CHAPTER.read_text() * 4, encoding="utf-8")
    out = tmp_path / "long.json"
    run = mangaka("write", str(chapter), "--model", str(model), "--ctx", "2048", *ONE_THREAD, "-o", str(out))
    assert run.returncode == 1
    # a longer chapter is written scene by scene, but a 2048-token context has no room for a scene
    assert re.search(r"a context of 2048 tokens, and no scene would: the prompt alone takes \d+", run.stderr)
    assert "larger context" in run.stderr and "Traceback" not in run.stderr
    assert not out.exists()


def test_write_an_empty_chapter_is_refused_before_loading(roomy_qwen35moe, tmp_path):
    model, _ = roomy_qwen35moe
    chapter = tmp_path / "empty.txt"
    chapter.write_text("  \n\n", encoding="utf-8")
    run = mangaka("write", str(chapter), "--model", str(model), *ONE_THREAD)
    assert run.returncode == 1
    assert "chapter" in run.stderr and "empty" in run.stderr
    with pytest.raises(InputError, match="chapter"):
        write_screenplay(LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=1)), " ", ScreenplayRequest())


def test_write_with_a_missing_model_or_a_non_gguf_file(tmp_path):
    run = mangaka("write", str(CHAPTER), "--model", str(tmp_path / "nope.gguf"))
    assert run.returncode == 1 and "nope.gguf not found" in run.stderr
    fake = tmp_path / "model.gguf"
    fake.write_text("this is a text file, not a model\n" * 4)
    run = mangaka("write", str(CHAPTER), "--model", str(fake))
    assert run.returncode == 1 and "not a GGUF file" in run.stderr


def test_qwen3moe_writes_a_valid_screenplay_in_process(tmp_path):
    model = write_model(tmp_path / "qwen3moe-32k.gguf", "qwen3moe", context_length=32768)
    lora = write_lora(tmp_path / "qwen3moe-32k-lora.gguf", model)
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=32768, n_threads=1), lora=lora, lora_scale=0.5)
    result = write_screenplay(
        llm, CHAPTER.read_text(), ScreenplayRequest(panels=2, dialogue=2, sampling=PRESETS["greedy"])
    )
    data = result.screenplay.model_dump(mode="json")
    jsonschema.validate(data, SCHEMA)
    assert validate_screenplay(data) == []
    assert result.usage.completion_tokens > 0


def test_output_cut_off_on_every_try_is_an_error_carrying_every_attempt(roomy_qwen35moe):
    """The context leaves room for only a few tokens: every try ends with finish_reason 'length',
    which is retried and reported, never returned as a screenplay."""
    model, _ = roomy_qwen35moe
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=1))
    filler = "x" * (4096 - 400)
    messages = [{"role": "user", "content": filler}]
    room = llm.n_ctx - llm.count_tokens(messages)
    assert 0 < room < 400
    schema = {
        "type": "object",
        "properties": {"story": {"type": "string", "minLength": 500, "maxLength": 600}},
        "required": ["story"],
        "additionalProperties": False,
    }
    with pytest.raises(InvalidOutputError) as err:
        generate_json(llm, messages, schema, max_attempts=2, max_tokens=2000, sampling=PRESETS["greedy"])
    attempts = err.value.attempts
    assert len(attempts) == 2
    assert all(a["finish_reason"] == "length" for a in attempts)
    assert "cut off" in str(err.value)


def test_output_rejected_on_every_try_feeds_the_problems_back(roomy_qwen35moe):
    model, _ = roomy_qwen35moe
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=8192, n_threads=1))
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "maxLength": 8}},
        "required": ["word"],
        "additionalProperties": False,
    }
    seen: list[int] = []
    with pytest.raises(InvalidOutputError) as err:
        generate_json(
            llm,
            [{"role": "user", "content": "Say the magic word."}],
            schema,
            validate=lambda d: [f"word: {d['word']!r} is not the magic word"],
            max_attempts=3,
            sampling=PRESETS["greedy"],
            context=CallContext(on_progress=lambda done, _total: seen.append(done)),
        )
    attempts = err.value.attempts
    assert len(attempts) == 3
    assert all("is not the magic word" in a["problems"][0] for a in attempts)
    assert "invalid on all 3 tries" in str(err.value)


class Recording:
    """The real in-process LLM, with every call's messages and thinking switch recorded."""

    def __init__(self, llm: LlamaCppLLM) -> None:
        self.llm, self.calls = llm, []

    def complete(self, messages, **kw):
        self.calls.append((messages, kw.get("thinking", False), kw.get("schema") is not None))
        return self.llm.complete(messages, **kw)

    def __getattr__(self, name):
        return getattr(self.llm, name)


def test_a_plan_with_thinking_goes_first_and_into_both_calls(roomy_qwen35moe, caplog):
    model, _lora = roomy_qwen35moe
    llm = Recording(LlamaCppLLM(model, LoadOptions(n_ctx=32768, n_threads=1)))
    seen: list[tuple[int, int]] = []
    with caplog.at_level("WARNING", logger="mangaka.screenplay.generate"):
        result = write_screenplay(
            llm,
            CHAPTER.read_text(),
            ScreenplayRequest(panels=2, dialogue=2, sampling=PRESETS["greedy"], think_tokens=48),
            context=CallContext(on_progress=lambda done, total: seen.append((done, total))),
        )
    assert validate_screenplay(result.screenplay.model_dump(mode="json")) == []
    (plan_messages, plan_thinking, plan_schema), *constrained = llm.calls
    assert plan_thinking and not plan_schema and "plan the adaptation" in plan_messages[-1]["content"]
    assert result.thinking  # the random model thinks until the budget: the plan is cut, and says so
    assert any("whole budget of 48 tokens" in r.message for r in caplog.records)
    for (
        messages,
        thinking,
        schema,
    ) in constrained:  # cast and script: constrained, thinking off, with the notes
        assert schema and not thinking
        assert any(result.thinking in m["content"] and "<notes>" in m["content"] for m in messages)
    # One bar over every call: the plan's tokens come first, then the cast's and the script's.
    assert seen[0][0] <= 48 and all(total > 48 for _, total in seen) and seen[-1][0] > 48
    assert result.usage.completion_tokens >= 48
    with pytest.raises(InputError, match="think_tokens must be from 0 to 32768"):
        write_screenplay(llm, "A chapter.", ScreenplayRequest(think_tokens=-1))
