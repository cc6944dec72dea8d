"""native/install.py: target detection, cache keys, and the check of the installed build."""

from __future__ import annotations

import importlib.util
import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mangaka_native_install", ROOT / "native" / "install.py")
install = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install)


def test_cache_folder_is_keyed_by_version_target_flags_and_python(tmp_path):
    key = install.cache_dir
    cpu = key(tmp_path, "0.3.36", "cpu", install.cmake_flags("cpu", None), "cp311-linux-x86_64")
    assert cpu == key(tmp_path, "0.3.36", "cpu", install.cmake_flags("cpu", None), "cp311-linux-x86_64")
    others = {
        key(tmp_path, "0.3.37", "cpu", install.cmake_flags("cpu", None), "cp311-linux-x86_64"),
        key(tmp_path, "0.3.36", "cuda", install.cmake_flags("cuda", "90"), "cp311-linux-x86_64"),
        key(tmp_path, "0.3.36", "cuda", install.cmake_flags("cuda", "86"), "cp311-linux-x86_64"),
        key(tmp_path, "0.3.36", "cpu", install.cmake_flags("cpu", None), "cp312-linux-x86_64"),
    }
    assert cpu not in others and len(others) == 4
    assert cpu.is_relative_to(tmp_path / "wheels" / "llama_cpp_python-0.3.36")


def test_flags_per_target():
    assert install.cmake_flags("cpu", None) == ["-DGGML_NATIVE=OFF"]
    assert "-DCMAKE_CUDA_ARCHITECTURES=90" in install.cmake_flags("cuda", "90")
    assert {"-DGGML_LSX=ON", "-DGGML_LASX=ON"} <= set(install.cmake_flags("loongarch", None))
    assert "-DGGML_METAL=ON" in install.cmake_flags("metal", None)


def test_target_detection(monkeypatch):
    monkeypatch.setattr(install.platform, "machine", lambda: "loongarch64")
    assert install.detect_target() == "loongarch"
    monkeypatch.setattr(install.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(install.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert install.detect_target() == "cuda"
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    assert install.detect_target() == "cpu"


def test_the_installed_build_passes_its_own_check():
    line = install.check_install(sys.executable, "cpu")
    assert line.startswith("llama-cpp-python 0.3.36 (cpu")
    if platform.machine() == "x86_64":
        assert "AVX2 = 1" in line


def test_a_cpu_only_build_fails_the_cuda_check():
    with pytest.raises(install.InstallError, match="came out CPU-only"):
        install.check_install(sys.executable, "cuda")


def test_second_install_uses_the_cached_wheel(caplog):
    caplog.set_level("INFO", logger="mangaka.native")
    assert install.main(["--target", "cpu", "--python", sys.executable]) == 0
    assert any("using cached wheel" in r.getMessage() for r in caplog.records)


def test_cpu_target_builds_for_this_cpu_when_it_lacks_avx2(monkeypatch, tmp_path):
    monkeypatch.setattr(install.platform, "machine", lambda: "x86_64")
    sandy = tmp_path / "cpuinfo"
    sandy.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx popcnt\n")
    old = install.host_cpu_flags(sandy)
    assert "avx" in old and "avx2" not in old
    assert install.cmake_flags("cpu", None, old) == ["-DGGML_NATIVE=ON"]
    assert install.expected_features("cpu", ["-DGGML_NATIVE=ON"]) == []
    # With AVX2 (or unknown flags), the portable wheel and its cache key stay as they were.
    assert install.cmake_flags("cpu", None, old | {"avx2", "fma"}) == ["-DGGML_NATIVE=OFF"]
    assert install.host_cpu_flags(tmp_path / "missing") is None
    assert install.expected_features("cpu", ["-DGGML_NATIVE=OFF"]) == ["AVX2 = 1"]
    monkeypatch.setattr(install.platform, "machine", lambda: "aarch64")
    assert install.cmake_flags("cpu", None, set()) == ["-DGGML_NATIVE=OFF"]


def test_a_gpu_build_that_sees_no_gpu_fails_loudly():
    info = {"version": "0.3.36", "system_info": "CUDA : ARCHS = 900 |", "gpu_offload": True}
    cpu = {"name": "CPU", "kind": "cpu"}
    with pytest.raises(install.InstallError, match="sees no GPU"):
        install.judge({**info, "devices": [cpu]}, "cuda")
    assert "GPUs" not in install.judge(
        {**info, "devices": [cpu]}, "cuda", need_gpu=False
    )  # a GPU-less builder
    line = install.judge({**info, "devices": [cpu, {"name": "CUDA0", "kind": "gpu"}]}, "cuda")
    assert "GPUs: CUDA0" in line
    with pytest.raises(install.InstallError, match="came out CPU-only"):
        install.judge({**info, "gpu_offload": False, "devices": [cpu]}, "cuda")
    # This machine's own build lists its CPU device.
    facts = subprocess.run([sys.executable, "-c", install.CHECK], capture_output=True, text=True, check=True)
    devices = json.loads(facts.stdout.strip().splitlines()[-1])["devices"]
    assert {"name": "CPU", "kind": "cpu"} in devices
