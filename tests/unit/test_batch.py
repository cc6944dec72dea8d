"""The queue's pieces that need no server: workflows, the state file, the progress view.
(The queue itself runs against real ComfyUI servers in tests/comfy/test_queue.py.)"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mangaka.batch.queue import ProgressView
from mangaka.batch.state import ChapterState, QueueState
from mangaka.batch.workflow import check_workflow, find_chapter_input, load_workflow, with_chapter
from mangaka.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "example_workflows" / "api" / "storyboard.json"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_api_twin_loads_and_its_chapter_input_is_the_screenwriters():
    prompt = load_workflow(TWIN)
    where = find_chapter_input(prompt)
    assert prompt[where.node_id]["class_type"] == "MangakaScreenwriter" and where.input == "chapter"
    changed = with_chapter(prompt, where, "Chapter text")
    assert changed[where.node_id]["inputs"]["chapter"] == "Chapter text"
    assert prompt[where.node_id]["inputs"]["chapter"] != "Chapter text"  # the original is untouched


def test_ui_format_is_refused_with_the_export_hint():
    with pytest.raises(InputError, match=r"UI-format.*Export \(API\)"):
        load_workflow(ROOT / "example_workflows" / "storyboard.json")


def test_ambiguous_and_missing_chapter_inputs_list_the_candidates(tmp_path):
    prompt = load_workflow(TWIN)
    writer = next(k for k, v in prompt.items() if v["class_type"] == "MangakaScreenwriter")
    prompt["99"] = json.loads(json.dumps(prompt[writer]))
    with pytest.raises(InputError, match="several chapter inputs"):
        find_chapter_input(prompt)
    assert str(find_chapter_input(prompt, "99.chapter")) == "99.chapter"
    with pytest.raises(InputError, match="candidates"):
        find_chapter_input({"1": {"class_type": "SaveImage", "inputs": {"filename_prefix": "x"}}})


def test_workflow_check_names_missing_nodes_and_models():
    prompt = load_workflow(TWIN)
    info = {v["class_type"]: {"input": {"required": {}, "optional": {}}} for v in prompt.values()}
    loader = next(k for k, v in prompt.items() if v["class_type"] == "MangakaLoadLLM")
    info["MangakaLoadLLM"]["input"]["required"]["model"] = ["COMBO", {"options": ["tiny.gguf"]}]
    del info["SaveImage"]
    problems = check_workflow(prompt, info, "http://x")
    assert any("SaveImage is not installed on http://x" in p for p in problems)
    assert any(f"node {loader} (MangakaLoadLLM): model 'Qwen3.5-35B-A3B-Q4_K_M.gguf'" in p for p in problems)


def test_state_file_is_reopened_and_guards_against_another_book(tmp_path):
    chapters = [ChapterState(1, "One", "01 One"), ChapterState(2, "Two", "02 Two")]
    state = QueueState.open(tmp_path, "book", "wf", chapters)
    state.chapters[1].status = "done"
    state.save()
    again = QueueState.open(tmp_path, "book", "wf", [ChapterState(1, "One", "01 One")])
    assert again.chapters[1].status == "done" and again.chapters[2].status == "pending"
    with pytest.raises(InputError, match="another book or workflow"):
        QueueState.open(tmp_path, "other book", "wf", chapters)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queue-state.json"]  # no temp file left


def test_progress_view_draws_book_and_chapter_bars_with_an_eta():
    stream = Tty()
    view = ProgressView(4, stream)
    view.update(1, "http://a:8188", 0.5, servers=2)
    assert "book [--------------------] 0/4" in stream.getvalue() and "ch1 50% @a:8188" in stream.getvalue()
    assert "ETA ?" in stream.getvalue()  # nothing finished yet: no estimate
    view.finish(1, 60.0, servers=2)
    view.update(2, "http://b:8188", 0.25, servers=2)
    # three left, one a quarter done: (0.75 + 2) chapters × 60 s ÷ 2 servers = 82 s
    assert "ETA 1:22" in stream.getvalue().rsplit("\r", 1)[-1]
    assert "book [#####---------------] 1/4" in stream.getvalue()
