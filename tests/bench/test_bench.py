"""``python -m mangaka bench`` runs and reports its figures as one JSON object.

Benchmarks print figures; these tests check that the command works and the behaviour the
figures stand for (tokens decoded, memory), never times.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mangaka import procs
from mangaka.paths import cache_root

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str, timeout: int = 900) -> dict:
    run = procs.run(
        [sys.executable, "-m", "mangaka", "bench", "--json", "--quick", "--threads", "1", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
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


def test_page_figures_and_every_key_is_documented_in_the_readme():
    figures = bench("--only", "page")
    for key in (
        "page_a4_compose_ms_en",
        "page_a4_compose_ms_zh",
        "page_a4_save_ms_png1",
        "page_a4_save_ms_png6",
    ):
        assert figures[key] > 0
    assert undocumented(figures) == []


def test_export_figures_time_a_twenty_page_chapter_in_each_format():
    """``export_*``: a 20-page A4 chapter written as CBZ, EPUB and PDF in one run; each file holds the
    pages' own bytes (its size is theirs, give or take the container's few KiB). Times are printed."""
    figures = bench("--only", "export")
    pages = figures["export_20_pages_input_mib"]
    for fmt in ("cbz", "epub", "pdf"):
        assert figures[f"export_20_pages_ms_{fmt}"] > 0
        assert abs(figures[f"export_20_pages_mib_{fmt}"] - pages) < 0.5, fmt  # PNG chunk headers aside
    assert undocumented(figures) == []


def undocumented(figures: dict) -> list[str]:
    """The keys of ``figures`` that the benchmark table in docs/performance.md does not name."""
    readme = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    documented = set()
    for row in readme.split("## Benchmark", 1)[1].split("\n## ", 1)[0].splitlines():
        if row.startswith("| `"):
            documented.update(re.findall(r"`([^`]+)`", row.split("|")[1]))

    def pattern(doc: str) -> str:  # `page_a4_save_ms_{png1,png6,jpeg92}`, `rss_mib_*`, `a_{b,c}_{d,e}`
        parts = re.split(r"(\{[^}]*\}|\*)", doc)
        return "".join(
            ".*" if part == "*"
            else "(?:" + "|".join(map(re.escape, part[1:-1].split(","))) + ")" if part.startswith("{")
            else re.escape(part)
            for part in parts
        )  # fmt: skip

    patterns = [re.compile(pattern(doc)) for doc in documented]
    return [k for k in figures if not any(p.fullmatch(k) for p in patterns)]


def test_grounded_figures_set_the_chapter_mode_beside_free():
    """``grounded_*``: the demo chapter written with dialogue from the chapter and free, in one run
    (``--quick``: on SmolLM2 only; a full run adds gemma-3-270m, the same code on a second model):
    every figure is there and documented; the chapter mode keeps every quoted line (the grammar
    forces their numbers), and its script call's forced share is counted. Times are printed, not
    asserted."""
    figures = bench("--only", "grounded", timeout=1800)
    quotes = figures["grounded_quotes"]
    assert quotes > 0 and not any(key.startswith("grounded_gemma") for key in figures)
    for model in ("embedded",):
        for mode in ("chapter", "free"):
            row = f"grounded_{model}_{mode}"
            assert 0 < figures[f"{row}_script_tokens"] < figures[f"{row}_tokens"]
            assert 0 < figures[f"{row}_script_seconds"] < figures[f"{row}_seconds"]
            assert 0 < figures[f"{row}_forced_fraction"] < 1
            assert figures[f"{row}_tries"] >= 2  # the cast call, then the script call
            assert 0 <= figures[f"{row}_quotes_kept"] <= quotes
        assert figures[f"grounded_{model}_chapter_quotes_kept"] == quotes
        ratios = f"grounded_{model}_chapter_over_free"
        assert figures[f"{ratios}_script_tokens"] == (
            figures[f"grounded_{model}_chapter_script_tokens"]
            / figures[f"grounded_{model}_free_script_tokens"]
        )
        for kind in ("tokens", "seconds", "script_seconds"):
            assert figures[f"{ratios}_{kind}"] > 0
    assert undocumented(figures) == []


def test_split_figures_time_books_without_headings():
    """``split_*``: books with no headings and only the finest cuts, split at two sizes in one run;
    every figure is there, positive and documented (the time ratio is printed, not asserted)."""
    figures = bench("--only", "split")
    assert figures["split_big_mb"] == 8
    for key in (
        "split_mb_per_s",
        "split_time_ratio_8x",
        "split_mb_per_s_one_char",
        "split_mb_per_s_cjk_sentences",
    ):
        assert figures[key] > 0
    assert figures["split_mb_per_s"] == min(v for k, v in figures.items() if k.startswith("split_mb_per_s_"))
    assert undocumented(figures) == []


def test_remote_concurrency_figures_print():
    import os

    from tests.background import wait_for

    wait_for(
        "MANGAKA_LLAMA_SERVER_PREPARE", "the llama-server build"
    )  # tests/run.sh builds it beside the tests
    figures = bench("--only", "remote")
    if figures["remote_n4_over_n1"] is None:
        assert os.environ.get("MANGAKA_REQUIRE_LLAMA_SERVER") != "1", "llama-server must be built for CI"
        return
    assert figures["remote_n1_tok_s"] > 0 and figures["remote_n4_tok_s"] > 0


def test_demo_figures_time_the_readme_command():
    """``demo_seconds``: the demo run as users run it, in a fresh process; every retry and repair
    it needed is counted from its log."""
    figures = bench("--only", "demo")
    assert figures["demo_seconds"] > 0
    assert type(figures["demo_retries"]) is int and type(figures["demo_repairs"]) is int, figures
    readme = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert "`demo_seconds`, `demo_retries`, `demo_repairs`" in readme


def test_manga_page_figures_time_the_example_workflow_in_comfyui():
    """``manga_page_seconds``: the example workflow, whole, in the comfy tier's ComfyUI on the test
    models (one cold run, then one timed in --quick); every panel is drawn."""
    import os

    figures = bench("--only", "manga_page")
    if figures["manga_page_seconds"] is None:
        assert os.environ.get("MANGAKA_REQUIRE_COMFY") != "1", "the ComfyUI cache must be there for CI"
        assert figures["manga_page_first_seconds"] is None and figures["manga_page_panels"] is None
        return
    assert figures["manga_page_seconds"] > 0 and figures["manga_page_first_seconds"] > 0
    assert figures["manga_page_panels"] == 3
    readme = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert "`manga_page_seconds`, `manga_page_first_seconds`, `manga_page_panels`" in readme


def test_manga_page_without_comfyui_is_skipped_naming_why(monkeypatch, tmp_path, caplog):
    from mangaka.devtools.bench.manga_page import KEYS, manga_page_run

    monkeypatch.setenv("MANGAKA_COMFY_DIR", str(tmp_path))  # no main.py there: no ComfyUI
    with caplog.at_level("WARNING", logger="mangaka"):
        assert manga_page_run(threads=1, timed=1) == dict.fromkeys(KEYS)
    assert f"MANGAKA_COMFY_DIR={tmp_path} has no main.py" in caplog.text


def test_lora_train_figures_show_what_the_memory_savings_save():
    """``--quick``: a narrow model at 1024 tokens (the real width: the full run, docs/performance.md).
    The answer-only loss and gradient checkpointing must each cost less memory than their
    alternative, measured; the products are bf16's or float32 blocks, as this CPU's speed decides."""
    from mangaka.devtools.bench.training import lora_python

    if lora_python() is None:
        pytest.skip("no LoRA Python: run the tests with `bash tests/run.sh`")
    figures = bench("--only", "lora_train")
    assert figures["lora_train_width"] == "small" and figures["lora_train_tokens"] == [1024]
    assert figures["lora_train_labels_over_answer_memory"] > 1.5
    assert figures["lora_train_checkpointing_off_over_on_memory"] > 1.0
    variants = ("on_answer", "off_answer", "on_labels")
    whole = {v: figures[f"lora_train_whole_model_8k_gib_{v}"] for v in variants}
    assert whole["on_answer"] < whole["off_answer"] and whole["on_answer"] < whole["on_labels"], whole
    assert figures["lora_train_parameters_whole_model"] > 0
    assert figures["lora_train_products"] in ("bf16", "float32") and figures["lora_train_matmul_ms_fp32"] > 0


def test_lora_train_without_a_lora_python_is_skipped_naming_how(monkeypatch, caplog):
    from mangaka.devtools.bench import training

    monkeypatch.setattr(training, "lora_python", lambda: None)
    with caplog.at_level("WARNING", logger="mangaka"):
        assert training.lora_train(quick=True) == dict.fromkeys(training.KEYS)
    assert "no LoRA Python" in caplog.text and "lora/requirements.txt" in caplog.text


STAND_IN_NVIDIA_SMI = """#!/bin/sh
# A stand-in for the driver's nvidia-smi (no GPU here): the two questions gpu_bench.sh asks.
case "$*" in
  *name,compute_cap*) echo "Stand-in GPU, 9.0, 143771 MiB, 0.0" ;;
  *compute_cap*) echo "9.0" ;;
  *) exit 9 ;;
esac
"""


def test_gpu_bench_dry_run_prints_the_real_shape_figures(tmp_path):
    """native/gpu_bench.sh on the CPU path (GPU_BENCH_DRY_RUN=1, a stand-in nvidia-smi) runs every
    step a GPU machine runs but the builds, and its real_shape step (--quick: Qwen3.5-35B-A3B's
    shape, 4 layers) prints finite figures under documented keys (llama-bench's are null where it
    is not built, as in CI: a dry run builds nothing), the logits finite."""
    stand_in = tmp_path / "bin" / "nvidia-smi"
    stand_in.parent.mkdir()
    stand_in.write_text(STAND_IN_NVIDIA_SMI)
    stand_in.chmod(0o755)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PATH": f"{stand_in.parent}{os.pathsep}{os.environ['PATH']}",
        "GPU_BENCH_DRY_RUN": "1",
        "PYTHON": sys.executable,
        "GPU_BENCH_HOME": str(tmp_path / "home"),
        "MANGAKA_CACHE": str(cache_root()),
        "OUT": str(out),
    }
    run = procs.run(
        ["bash", str(ROOT / "native" / "gpu_bench.sh")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Stand-in GPU" in (out / "gpu.txt").read_text()
    assert json.loads((out / "gpu-check.json").read_text())["mode"] == "cpu-only"
    assert json.loads((out / "bench.json").read_text())["gpu_layers"] == -1
    figures = json.loads((out / "real-shape.json").read_text())
    assert figures["real_shape_layers"] == 4 and figures["real_shape_quant"] == "Q4_K_M"
    ceiling = {k for k in figures if "llama_bench" in k}
    assert len(ceiling) == 6
    for key, value in figures.items():
        if key.startswith(("real_shape_", "memory_bandwidth")) and key not in (
            "real_shape_quant",
            "real_shape_flash_attn",
        ):
            if key in ceiling and value is None:
                continue
            assert isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, (key, value)
    assert figures["real_shape_logits_finite"] == 1.0
    assert 0 < figures["real_shape_forced_fraction"] < 1
    assert figures["real_shape_memory_estimate_compute_gib"] > 0.4  # 512 × 248,320 float32 logits
    assert "real_shape_decode_tok_s_ctx2048" in figures
    setups = ("pack", "snapshots", "bench_like", "pack_loop")
    assert all(figures[f"real_shape_setup_{name}_tok_s"] > 0 for name in setups)
    assert figures["real_shape_snapshots_cost"] > 0 and figures["real_shape_pack_over_bench_like_setup"] > 0
    assert figures["real_shape_pack_loop_over_bench_like_setup"] > 0
    # a CPU-only build: the load asked for flash attention off, and both modes were measured
    assert figures["real_shape_flash_attn"] == "off" and figures["real_shape_flash_attn_depth"] == 2048
    assert figures["real_shape_flash_attn_auto_tok_s"] > 0 and figures["real_shape_flash_attn_off_tok_s"] > 0
    assert figures["real_shape_flash_attn_off_over_auto"] > 0
    assert figures["real_shape_flash_attn_prefill_off_over_auto"] > 0
    assert undocumented(figures) == []


def test_video_figures_time_a_render_and_its_memory_does_not_grow_with_length():
    """``video_*``: a 12 s and a 60 s motion comic (``--quick``), each in a process of its own; the
    longer one's peak memory stays within 15 % of the shorter one's (frames and sound are streamed).
    Times are printed, not asserted."""
    figures = bench("--only", "video")
    assert figures["video_long_seconds"] >= 4 * figures["video_short_seconds"]
    assert figures["video_work_per_second_short"] > 0 and figures["video_work_per_second_long"] > 0
    assert figures["video_peak_long_over_short"] < 1.15
    assert undocumented(figures) == []
