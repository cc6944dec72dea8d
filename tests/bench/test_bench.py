"""``python -m mangaka bench`` runs and reports its figures as one JSON object.

Benchmarks print figures; these tests check that the command works and the behaviour the
figures stand for (tokens decoded, memory), never times.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "mangaka", "bench", "--json", "--quick", "--threads", "1", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_prefix_reuse_and_lora_memory_figures():
    figures = bench("--only", "prefix", "--only", "lora_memory")
    assert figures["llama_cpp_python"] and figures["threads"] == 1
    with_reuse = figures["qwen35moe_chapter2_decoded_with_reuse"]
    without = figures["qwen35moe_chapter2_decoded_without_reuse"]
    assert without == figures["qwen35moe_chapter2_prompt_tokens"]
    # Chapter 2 decodes only its own tokens: everything after the shared system prompt.
    assert with_reuse == without - figures["qwen35moe_shared_prefix_tokens"]
    assert figures["qwen35moe_shared_prefix_tokens"] > 100
    assert figures["rss_with_lora_over_without"] <= 1.1
    # llama-cpp-python's lora_path route copies the model into anonymous memory; ours does not.
    copy = figures["anon_mib_with_lora_path"] - figures["anon_mib_without_lora"]
    ours = figures["anon_mib_with_lora_after_load"] - figures["anon_mib_without_lora"]
    assert copy > 0.8 * figures["lora_model_file_mib"] and ours < 0.3 * figures["lora_model_file_mib"]


def test_an_unknown_part_is_named():
    run = subprocess.run(
        [sys.executable, "-m", "mangaka", "bench", "--only", "nonsense"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 1 and "unknown benchmark nonsense" in run.stderr
