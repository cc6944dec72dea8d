"""The LoongArch proof (native/loongarch_check.py) with MANGAKA_LOONGARCH=1, which .ci/run sets:
tests/run.sh then fetches the tools and builds llama.cpp for loongarch64 at install time (about
15 minutes of compiling cold; cached), in the background at the lowest priority while the other
steps and tests run; this test waits for that build (``MANGAKA_LOONGARCH_PREPARE``: its log, with
``.done`` beside it when it ends, holding its exit code), then runs the check --offline:
the LASX count, ggml's quantisation tests and the tiny qwen35moe model under qemu -cpu la464,
and the SIGILL without LASX. tests/run.sh runs the quantisation tests (minutes on one core) right
after the build, beside the other tests, and hands their result over
(``MANGAKA_LOONGARCH_QUANTIZED``); run alone, the check runs them itself. Without
MANGAKA_LOONGARCH=1 it skips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.background import wait_for

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.environ.get("MANGAKA_LOONGARCH") != "1",
    reason="opt-in: MANGAKA_LOONGARCH=1 (.ci/run sets it; tests/run.sh then prepares the build)",
)


def test_lasx_build_passes_under_qemu_matches_x86_and_needs_lasx():
    wait_for("MANGAKA_LOONGARCH_PREPARE", "the loongarch64 build")
    # tests/run.sh ran ggml's quantisation tests beside the other tests, on the same build: their
    # result is read (the check refuses one from another build); without it they run here.
    quantized = os.environ.get("MANGAKA_LOONGARCH_QUANTIZED")
    given = ["--quantize-from", quantized] if quantized else []
    done = subprocess.run(
        [sys.executable, str(ROOT / "native" / "loongarch_check.py"), "--offline", *given],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode in (0, 1), done.stderr  # 2: not prepared (the message says how)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["instructions"]["lasx"] > 1000 and result["instructions"]["lsx"] > 1000
    assert result["test_quantize_fns"] == 0, result.get("test_quantize_fns_output")
    assert result["generation_identical"], result["generated"]
    assert result["lasx_off_returncode"] in (-4, 132)  # SIGILL without LASX
    assert done.returncode == 0 and result["ok"]


def test_quantisation_results_from_another_build_are_refused(tmp_path):
    """The quantisation tests' result handed over by tests/run.sh names the build it ran on; the
    check refuses one from any other build instead of passing on it."""
    wait_for("MANGAKA_LOONGARCH_PREPARE", "the loongarch64 build")
    other = tmp_path / "quantized.json"
    other.write_text(
        json.dumps({"returncode": 0, "output": "", "binaries": "/elsewhere/bin"}), encoding="utf-8"
    )
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "native" / "loongarch_check.py"),
            "--offline",
            "--quantize-from",
            str(other),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr
    assert "the quantisation tests given ran on /elsewhere/bin, not on" in done.stderr
