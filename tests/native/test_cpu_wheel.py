"""The portable cpu wheel (native/cpu_check.py): the llama-cpp-python every other test ran on is
native/install.py's cpu wheel, with no AVX-512 code, generating under an emulated AVX2-only CPU
what it generates natively, and stopping with SIGILL below AVX2. tests/run.sh fetches the tools
(capstone, qemu-user 10) at install time and sets MANGAKA_REQUIRE_EMULATION=1; run alone without
them, this test skips."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "native" / "cpu_check.py"

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="the portable wheel check is for x86-64"
)


def load():
    spec = importlib.util.spec_from_file_location("mangaka_native_cpu_check_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def installed_target() -> str | None:
    url = load().installed_wheel(sys.executable)["direct_url"] or {}
    folder = Path(url.get("url", "")).parent.name
    return folder.split("-", 1)[0] if folder else None


def test_the_wheel_under_test_is_the_portable_cpu_build_and_runs_on_avx2_only():
    target = installed_target()
    if target != "cpu":
        pytest.skip(
            f"this environment runs the {target or 'unknown'} build, not native/install.py's cpu wheel"
        )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--offline"], capture_output=True, text=True, timeout=1200
    )
    if done.returncode == 2 and os.environ.get("MANGAKA_REQUIRE_EMULATION") != "1":
        pytest.skip(f"tools not prepared: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["provenance"]["from_native_cpu_cache"] and result["provenance"]["sha256_matches"]
    assert result["instructions"]["avx512"] == 0 and result["instructions"]["avx_avx2"] > 1000
    assert result["avx2_cpu_identical"], result["generated"]
    assert result["pre_avx2_imports"] and result["pre_avx2_returncode"] in (-4, 132)  # SIGILL, not a crash
    assert done.returncode == 0 and result["ok"]


def test_provenance_tells_another_cache_folder_apart(tmp_path):
    check = load()
    install = check._load("install")
    cache = Path(os.environ.get("MANGAKA_CACHE", Path.home() / ".cache" / "mangaka"))
    if installed_target() != "cpu":
        pytest.skip("this environment does not run native/install.py's cpu wheel")
    assert check.provenance(sys.executable, install, cache)["from_native_cpu_cache"]
    assert not check.provenance(sys.executable, install, tmp_path)["from_native_cpu_cache"]
