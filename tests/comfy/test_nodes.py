"""The pack inside a real ComfyUI 0.3.75: import, node registration, workflows over /prompt."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import jsonschema
import pytest

from mangaka.screenplay import validate_screenplay
from mangaka.screenplay.scenes import auto_dialogue, auto_panels
from tests.comfy.harness import FINAL_TYPES, RunResult
from tests.comfy.support import LORA, MODEL, SCHEMA, workflow

NODES = ("MangakaLoadLLM", "MangakaScreenwriter", "MangakaStructuredOutput", "MangakaSaveScreenplay")


def combo_options(entry: list) -> list[str]:
    """A combo input's choices in /object_info: V3 nodes send ["COMBO", {"options": [...]}]."""
    return entry[1]["options"] if entry[0] == "COMBO" else entry[0]


def test_pack_imports_and_registers_its_nodes(server):
    assert server.import_failures() == [], server.log_tail()
    info = server.object_info()
    missing = [n for n in NODES if n not in info]
    assert not missing, f"not registered: {missing}"
    load = info["MangakaLoadLLM"]
    assert load["display_name"] == "Load LLM (GGUF)"
    assert MODEL in combo_options(load["input"]["required"]["model"])
    assert LORA in combo_options(load["input"]["required"]["lora"])
    assert info["MangakaSaveScreenplay"]["output_node"] is True


def test_only_gguf_files_are_listed(server):
    (server.base_dir / "models" / "LLM" / "notes.txt").write_text("not a model")
    options = combo_options(server.object_info("MangakaLoadLLM")["input"]["required"]["model"])
    assert MODEL in options and "notes.txt" not in options


def test_screenwriter_workflow_writes_a_valid_screenplay_with_progress(server):
    result = server.run_prompt(workflow(), timeout=300)
    assert result.status == "success", result.describe()
    writer_progress = [p for p in result.progress if p.get("node") == "2"]
    assert len(writer_progress) >= 2, result.types
    values = [p["value"] for p in writer_progress]
    assert values == sorted(values) and all(p["max"] > 0 for p in writer_progress)
    saved = Path(result.outputs["3"]["text"][0].removeprefix("saved "))
    files = sorted((server.base_dir / "output" / "mangaka").glob("test_*.json"))
    assert files and files[-1].name == saved.name
    data = json.loads(files[-1].read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    assert validate_screenplay(data) == []
    assert len(data["panels"]) == 2 and len(data["dialogue"]) == 2


def test_screenwriter_counts_panels_and_lines_from_the_chapter_when_auto(server):
    said = " ".join(f'"Run, Mei, run {i}!" Akira shouted at the platform.' for i in range(6))
    chapter = "\n\n".join([said, "The last train pulled in at midnight. " * 120])
    prompt = workflow(chapter)
    prompt["2"]["inputs"]["auto_counts"] = "panels and lines"
    result = server.run_prompt(prompt, timeout=300)
    assert result.status == "success", result.describe()
    data = json.loads(sorted((server.base_dir / "output" / "mangaka").glob("test_*.json"))[-1].read_text())
    panels = auto_panels(chapter)
    assert panels > 2  # not the widget's 2
    assert len(data["panels"]) == panels
    assert len(data["dialogue"]) == auto_dialogue(chapter, "en", panels)
    bad = workflow()
    bad["2"]["inputs"]["auto_counts"] = "sometimes"
    status, body = server.post_prompt(bad)
    assert status == 400 and "auto_counts" in json.dumps(body)


def test_screenwriter_plans_first_when_asked_and_outputs_the_thinking(server):
    prompt = workflow(panels=1, dialogue=1)
    prompt["2"]["inputs"]["think_tokens"] = 32
    prompt["4"] = {"class_type": "PreviewAny", "inputs": {"source": ["2", 2]}}  # thinking
    result = server.run_prompt(prompt, timeout=300)
    assert result.status == "success", result.describe()
    assert "".join(result.outputs["4"]["text"]).strip()  # the random model's plan: noise, but there
    assert server.object_info("MangakaScreenwriter")["output_name"][2] == "thinking"


def test_screenwriter_reports_its_tries_and_repairs(server):
    prompt = workflow(panels=1, dialogue=1)
    prompt["4"] = {"class_type": "PreviewAny", "inputs": {"source": ["2", 3]}}  # report
    result = server.run_prompt(prompt, timeout=300)
    assert result.status == "success", result.describe()
    report = "".join(result.outputs["4"]["text"])
    expected = r"\d+ characters, 1 lines, 1 panels; \d+ tries \(\d+ retried\), \d+ repairs"
    assert re.match(expected, report), report
    # Quote recall without a gold file: one line cannot keep most of the chapter's dialogue.
    # The panels' sources cover the chapter (the default: dialogue from the chapter).
    fidelity = r"^kept \d+ of \d+ quoted lines, (in|out of) order; panels cover paragraphs 1–\d+$"
    assert re.search(fidelity, report, re.M), report
    assert "warning: the screenplay kept only" in report and "(dialogue_lines " in report, report
    assert server.object_info("MangakaScreenwriter")["output_name"][3] == "report"


def test_save_never_overwrites(server):
    first = server.run_prompt(workflow(panels=1, dialogue=1), timeout=300)
    second = server.run_prompt(workflow(panels=1, dialogue=1, lora_strength=0.5), timeout=300)
    assert first.status == second.status == "success", first.describe() + second.describe()
    names = [r.outputs["3"]["text"][0] for r in (first, second)]
    assert names[0] != names[1]


# A small prompt that needs no model: queued right after /interrupt, it marks the running prompt's
# message stream (see ``interrupt``).
MARKER = {
    "1": {"class_type": "PrimitiveString", "inputs": {"value": "queued after /interrupt"}},
    "2": {"class_type": "PreviewAny", "inputs": {"source": ["1", 0]}},
}


def interrupt(server, run, node: str) -> tuple[RunResult, int]:
    """POST /interrupt while ``node`` writes; the run's result, and how many ``progress`` messages
    of ``node`` were sent once ComfyUI's interrupt flag was up.

    Counted, not timed. ComfyUI sends every websocket message through one queue, in order, and
    queueing a prompt sends a ``status`` message to every client: the ``MARKER`` prompt, posted
    once /interrupt has answered (the flag is raised before it answers), puts a mark in the stream
    after the flag. ComfyUI's progress hook checks the flag before it sends, so after the mark a
    node that stops there sends at most one report (one that passed the check just before the
    flag rose), however loaded the machine: the next report raises, and the node's own ``cancel``
    check stops it at the next token anyway. A node that swallowed the interrupt (which also lowers
    the flag) and wrote on would go on reporting, about ten times a second
    (``nodes/_comfy.Progress``), for the seconds its request has left.
    """
    assert server.interrupt() == 200
    status, body = server.post_prompt(MARKER)
    assert status == 200, body
    result = run.wait(120)
    first = next(i for i, m in enumerate(result.messages) if _progress_of(m, node))
    late, marked = 0, False
    for m in result.messages[first:]:
        if m.get("type") in FINAL_TYPES:
            break
        if m.get("type") == "status":  # the MARKER's: the queue does not change while the node runs
            marked = True
        elif marked and _progress_of(m, node):
            late += 1
    return result, late


def _progress_of(message: dict, node: str) -> bool:
    return message.get("type") == "progress" and message["data"].get("node") == node


def test_interrupt_during_generation_stops_the_node_and_the_model_stays_usable(server):
    # The largest request the tiny model's context allows: many seconds of generation.
    run = server.start_prompt(workflow(panels=24, dialogue=48, lora_strength=0.25))
    run.wait_for(lambda m: _progress_of(m, "2"), timeout=120)
    result, late = interrupt(server, run, "2")
    assert result.status == "interrupted", result.describe()
    assert late <= 1, f"{late} progress reports after the interrupt: {result.describe()}"
    # The model is still usable afterwards.
    again = server.run_prompt(workflow(panels=1, dialogue=1), timeout=300)
    assert again.status == "success", again.describe()


def test_empty_chapter_is_a_readable_400(server):
    status, body = server.post_prompt(workflow(chapter="   "))
    assert status == 400, body
    errors = body["node_errors"]["2"]["errors"]
    assert errors[0]["type"] == "custom_validation_failed"
    assert "the chapter is empty" in errors[0]["details"]


def test_missing_model_is_a_readable_400(server):
    status, body = server.post_prompt(workflow(model="Qwen3.5-35B-A3B-Q4_K_M.gguf"))
    assert status == 400, body
    text = json.dumps(body["node_errors"]["1"])
    assert "Qwen3.5-35B-A3B-Q4_K_M.gguf" in text


def test_unsupported_architecture_is_a_readable_400(server):
    status, body = server.post_prompt(workflow(model="tiny-qwen99moe.gguf"))
    assert status == 400, body
    details = body["node_errors"]["1"]["errors"][0]["details"]
    assert "'qwen99moe'" in details and "cannot load" in details


def test_lora_for_another_architecture_is_a_readable_400(server):
    status, body = server.post_prompt(workflow(lora="tiny-qwen3moe-lora.gguf"))
    assert status == 400, body
    details = body["node_errors"]["1"]["errors"][0]["details"]
    assert "made for 'qwen3moe' models" in details


def test_free_releases_the_llm(server):
    result = server.run_prompt(workflow(panels=1, dialogue=1, lora_strength=0.75), timeout=300)
    assert result.status == "success", result.describe()
    assert server.get_json("/mangaka/llm")["loaded"], "the model should be cached after a run"
    assert server.free() == 200
    deadline = time.monotonic() + 10
    while server.get_json("/mangaka/llm")["loaded"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert server.get_json("/mangaka/llm")["loaded"] == []


def test_structured_output_with_a_user_schema(server):
    schema = {
        "type": "object",
        "properties": {"mood": {"type": "string", "enum": ["calm", "tense"]}},
        "required": ["mood"],
        "additionalProperties": False,
    }
    prompt = {
        "1": workflow()["1"],
        "2": {
            "class_type": "MangakaStructuredOutput",
            "inputs": {
                "llm": ["1", 0],
                "prompt": "What is the mood of the scene?",
                "schema": json.dumps(schema),
                "system": "Answer with JSON only.",
                "max_tokens": 64,
                "max_attempts": 2,
                "sampling": "greedy",
                "seed": 0,
            },
        },
        "3": {"class_type": "PreviewAny", "inputs": {"source": ["2", 0]}},
    }
    result = server.run_prompt(prompt, timeout=120)
    assert result.status == "success", result.describe()
    bad = dict(prompt)
    bad["2"] = {**prompt["2"], "inputs": {**prompt["2"]["inputs"], "schema": '{"not": {}}'}}
    status, body = server.post_prompt(bad)
    assert status == 400 and "'not'" in json.dumps(body["node_errors"]["2"])


LIN = {
    "id": "lin",
    "name": "Lin",
    "appearance": "hand-drawn look: short black hair, red coat",
    "edited": True,
}


def bible_text(*characters: dict) -> str:
    return json.dumps({"version": 1, "characters": list(characters)})


@pytest.mark.parametrize(
    ("bible", "expected"),
    [
        ('{"version": 1, "characters": [', "bible: not valid JSON"),
        (
            bible_text({"id": "lin", "name": "Lin"}, {"id": "lin", "name": "Tan"}),
            "'lin' is already characters[0]'s id ('Lin'), here reused for 'Tan'",
        ),
        (
            bible_text({"id": "lin", "name": "Lin"}, {"id": "tan", "name": "Tan", "aliases": ["lin"]}),
            "the name 'lin' also names characters[0]",
        ),
    ],
)
def test_an_invalid_bible_on_the_screenwriter_is_a_readable_400_naming_the_input(server, bible, expected):
    prompt = workflow()
    prompt["2"]["inputs"]["bible"] = bible
    status, body = server.post_prompt(prompt)
    assert status == 400, body
    errors = body["node_errors"]["2"]["errors"]
    assert errors[0]["type"] == "custom_validation_failed"
    details = errors[0]["details"]
    assert "Screenwriter: bible" in details and expected in details, details
    assert "1" not in body["node_errors"]  # refused at validation: no node ran, no model was loaded


def test_a_bible_file_not_in_the_bibles_folder_is_a_readable_400(server):
    prompt = workflow()
    prompt["2"]["inputs"]["bible_file"] = "no-such-bible.json"
    status, body = server.post_prompt(prompt)
    assert status == 400, body
    details = body["node_errors"]["2"]["errors"][0]["details"]
    assert "bible_file 'no-such-bible.json' is not in input/mangaka_bibles" in details, details


def test_screenwriter_writes_with_a_bible_and_outputs_it_with_the_chapters_cast(server):
    folder = server.base_dir / "input" / "mangaka_bibles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ferry.json").write_text(bible_text(LIN), encoding="utf-8")
    prompt = workflow(panels=1, dialogue=1)
    prompt["2"]["inputs"].update(bible_file="ferry.json", chapter_number=3)
    prompt["4"] = {"class_type": "PreviewAny", "inputs": {"source": ["2", 4]}}  # bible
    result = server.run_prompt(prompt, timeout=300)
    assert result.status == "success", result.describe()
    assert server.object_info("MangakaScreenwriter")["output_name"][4] == "bible"
    bible = json.loads("".join(result.outputs["4"]["text"]))
    entries = {c["id"]: c for c in bible["characters"]}
    assert {**entries["lin"], **LIN} == entries["lin"] and entries["lin"]["aliases"] == []  # untouched
    saved = sorted((server.base_dir / "output" / "mangaka").glob("test_*.json"))[-1]
    screenplay = json.loads(saved.read_text(encoding="utf-8"))
    for c in screenplay["characters"]:
        assert c["id"] in entries, c
        if c["id"] == "lin":
            assert c["appearance"] == LIN["appearance"]
        else:
            assert entries[c["id"]]["first_chapter"] == 3  # new in this chapter


def series_cast(chapters: int) -> dict:
    book = "\n\n".join(f"Chapter {n}\n\nLin met Tan at the ferry on day {n}." for n in range(1, chapters + 1))
    return {
        "1": workflow()["1"],
        "2": {"class_type": "MangakaSplitChapters", "inputs": {"book": book, "max_chars": 20000}},
        "3": {
            "class_type": "MangakaSeriesCast",
            "inputs": {
                "llm": ["1", 0],
                "chapters": ["2", 0],
                "numbers": ["2", 3],
                "language": "en",
                "max_characters": 8,
                "sampling": "greedy",
                "seed": 0,
                "bible": bible_text(LIN),
            },
        },
        "4": {"class_type": "PreviewAny", "inputs": {"source": ["3", 0]}},
    }


def test_series_cast_reads_every_chapter_into_one_bible_with_a_progress_bar(server):
    result = server.run_prompt(series_cast(3), timeout=300)
    assert result.status == "success", result.describe()
    [text] = result.outputs["4"]["text"]  # one bible for the three chapters, not a list
    bible = json.loads(text)
    assert bible["characters"][0] == {**bible["characters"][0], **LIN}
    assert {c["first_chapter"] for c in bible["characters"][1:]} <= {1, 2, 3}
    bar = [p for p in result.progress if p.get("node") == "3"]
    assert bar and bar[-1]["value"] == bar[-1]["max"]


def test_series_cast_stops_on_interrupt(server):
    run = server.start_prompt(series_cast(40))
    run.wait_for(lambda m: _progress_of(m, "3"), timeout=120)
    result, late = interrupt(server, run, "3")  # the count is explained there
    assert result.status == "interrupted", result.describe()
    assert late <= 1, f"{late} progress reports after the interrupt: {result.describe()}"
