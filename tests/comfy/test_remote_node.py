"""Remote LLM (OpenAI-compatible) inside a real ComfyUI: Remote LLM → Screenwriter → Save
Screenplay against llama-cpp-python's own server started here with the tiny model."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from mangaka.devtools.tiny_models import write_model
from mangaka.screenplay import validate_screenplay
from tests.comfy.support import CHAPTER, SCHEMA
from tests.servers import Server as PyServer


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory):
    model = write_model(tmp_path_factory.mktemp("remote") / "tiny.gguf", "qwen35moe", context_length=32768)
    s = PyServer(model).start()
    yield s
    s.stop()


def remote_workflow(url: str, **remote) -> dict:
    return {
        "1": {
            "class_type": "MangakaRemoteLLM",
            "inputs": {
                "base_url": url,
                "model": "",
                "api_key_env": "",
                "server": "auto",
                "concurrency": 1,
                **remote,
            },
        },
        "2": {
            "class_type": "MangakaScreenwriter",
            "inputs": {
                "llm": ["1", 0],
                "chapter": CHAPTER,
                "language": "en",
                "panels": 2,
                "dialogue_lines": 2,
                "max_characters": 3,
                "sampling": "greedy",
                "seed": 0,
                "max_attempts": 3,
            },
        },
        "3": {
            "class_type": "MangakaSaveScreenplay",
            "inputs": {"screenplay": ["2", 0], "filename_prefix": "mangaka/remote"},
        },
    }


def test_remote_llm_to_screenwriter_to_save_screenplay(server, llm_server):
    result = server.run_prompt(remote_workflow(llm_server.url), timeout=300)
    assert result.status == "success", result.describe()
    assert [p for p in result.progress if p.get("node") == "2"], "the Screenwriter's progress bar moved"
    saved = result.outputs["3"]["text"][0].removeprefix("saved ")
    data = json.loads((server.base_dir / "output" / "mangaka" / saved).read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    assert validate_screenplay(data) == []


def test_a_key_in_place_of_a_variable_name_is_a_400_that_does_not_echo_it(server, llm_server):
    status, body = server.post_prompt(remote_workflow(llm_server.url, api_key_env="sk-live-123.456"))
    assert status == 400
    assert "NAME of an environment variable" in json.dumps(body) and "sk-live-123" not in json.dumps(body)


def test_doctor_node_reports_on_the_server_machine(server):
    prompt = {
        "1": {"class_type": "MangakaDoctor", "inputs": {"model": "tiny-qwen35moe.gguf", "context": 4096}}
    }
    result = server.run_prompt(prompt, timeout=120)
    assert result.status == "success", result.describe()
    text = result.outputs["1"]["text"][0]
    assert "llama-cpp-python: 0.3.36" in text
    assert re.search(r"tiny-qwen35moe\.gguf: qwen35moe, \d+ tensors, [\d.]+ GiB, complete, loadable", text), (
        text
    )
