"""The LoongArch proof (native/loongarch_check.py) with MANGAKA_LOONGARCH=1, which .ci/run sets:
tests/run.sh then fetches the tools and builds llama.cpp for loongarch64 at install time (about
15 minutes cold on 2 cores, in the background; cached), and this test runs the check --offline:
the LASX count, ggml's quantisation tests and the tiny qwen35moe model under qemu -cpu la464,
and the SIGILL without LASX. Without MANGAKA_LOONGARCH=1 it skips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.environ.get("MANGAKA_LOONGARCH") != "1",
    reason="opt-in: MANGAKA_LOONGARCH=1 (.ci/run sets it; tests/run.sh then prepares the build)",
)


def test_lasx_build_passes_under_qemu_matches_x86_and_needs_lasx():
    done = subprocess.run(
        [sys.executable, str(ROOT / "native" / "loongarch_check.py"), "--offline"],
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
