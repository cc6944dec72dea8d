"""native/llama_bench.py: cache keys, configure options, the sdist unpacking and llama-bench's JSON."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mangaka_llama_bench", ROOT / "native" / "llama_bench.py")
llama_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(llama_bench)
install = llama_bench.load_install()

# What `llama-bench -p 64 -n 16 -o json` prints (fields trimmed to the ones that matter here).
SAMPLE = """[
  {
    "build_commit": "unknown", "cpu_info": "AMD EPYC", "gpu_info": "", "backends": "CPU",
    "model_type": "llama ?B Q4_1", "n_threads": 2, "n_gpu_layers": -1,
    "n_prompt": 64, "n_gen": 0, "n_depth": 0,
    "avg_ns": 100000000, "stddev_ns": 1000000, "avg_ts": 640.5, "stddev_ts": 6.25,
    "samples_ns": [ 100000000 ], "samples_ts": [ 640.5 ]
  },
  {
    "build_commit": "unknown", "cpu_info": "AMD EPYC", "gpu_info": "", "backends": "CPU",
    "model_type": "llama ?B Q4_1", "n_threads": 2, "n_gpu_layers": -1,
    "n_prompt": 0, "n_gen": 16, "n_depth": 0,
    "avg_ns": 200000000, "stddev_ns": 2000000, "avg_ts": 80.25, "stddev_ts": 0.5,
    "samples_ns": [ 200000000 ], "samples_ts": [ 80.25 ]
  }
]
"""


def test_cache_folder_is_keyed_by_version_target_flags_and_platform(tmp_path):
    def key(version, target, arch=None, plat="linux-x86_64"):
        options = llama_bench.configure_options(install.cmake_flags(target, arch))
        return llama_bench.cache_dir(tmp_path, version, target, options, plat)

    cpu = key("0.3.36", "cpu")
    assert cpu == key("0.3.36", "cpu")
    others = {
        key("0.3.37", "cpu"),
        key("0.3.36", "cuda", "90"),
        key("0.3.36", "cuda", "86"),
        key("0.3.36", "cpu", plat="linux-aarch64"),
    }
    assert cpu not in others and len(others) == 4
    assert cpu.parent == tmp_path / "llama-bench" / "llama_cpp_python-0.3.36"
    assert cpu.name.startswith("cpu-linux-x86_64-")


def test_configure_options_build_the_tools_with_the_wheels_flags():
    options = llama_bench.configure_options(install.cmake_flags("cuda", "90"))
    assert "-DLLAMA_BUILD_TOOLS=ON" in options
    assert "-DBUILD_SHARED_LIBS=OFF" in options
    assert options[-len(install.cmake_flags("cuda", "90")) :] == install.cmake_flags("cuda", "90")


def test_print_path_fails_when_not_built(tmp_path, capsys):
    assert llama_bench.main(["--print-path", "--target", "cpu", "--cache", str(tmp_path)]) == 1
    assert capsys.readouterr().out == ""


def test_print_path_prints_a_built_binary(tmp_path, capsys):
    options = llama_bench.configure_options(install.cmake_flags("cpu", None))
    binary = llama_bench.cache_dir(tmp_path, install.PINNED_VERSION, "cpu", options) / "llama-bench"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    assert llama_bench.main(["--print-path", "--target", "cpu", "--cache", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{binary}\n"


def _add(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_only_vendor_llama_cpp_and_pkg_info_are_unpacked(tmp_path):
    tarball = tmp_path / "llama_cpp_python-9.9.9.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        _add(tar, "llama_cpp_python-9.9.9/PKG-INFO", "Metadata-Version: 2.1\nVersion: 9.9.9\n")
        _add(tar, "llama_cpp_python-9.9.9/llama_cpp/__init__.py", "")
        _add(tar, "llama_cpp_python-9.9.9/vendor/llama.cpp/CMakeLists.txt", "project(x)\n")
        _add(tar, "llama_cpp_python-9.9.9/vendor/llama.cppx/other.txt", "")
    source = llama_bench.unpack_llama_cpp(tarball, tmp_path / "src")
    assert (source / "CMakeLists.txt").read_text() == "project(x)\n"
    assert llama_bench.sdist_version(source.parent.parent) == "9.9.9"
    assert not (tmp_path / "src" / "llama_cpp_python-9.9.9" / "llama_cpp").exists()
    assert not (tmp_path / "src" / "llama_cpp_python-9.9.9" / "vendor" / "llama.cppx").exists()


def test_a_tarball_without_llama_cpp_is_refused(tmp_path):
    tarball = tmp_path / "empty.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        _add(tar, "x-1/PKG-INFO", "Version: 1\n")
    with pytest.raises(llama_bench.BenchBuildError, match=r"no vendor/llama\.cpp"):
        llama_bench.unpack_llama_cpp(tarball, tmp_path / "src")


def test_command_line():
    cmd = llama_bench.llama_bench_command("/b/lb", "/m.gguf", 2, 128, 0, gpu_layers=99, repetitions=3)
    assert cmd == [
        "/b/lb", "-m", "/m.gguf", "-t", "2", "-p", "0", "-n", "128",
        "-ngl", "99", "-r", "3", "-o", "json",
    ]  # fmt: skip


def test_tg_and_pp_are_read_from_the_json():
    result = llama_bench.parse_llama_bench_json("build: x\n" + SAMPLE)
    assert result["tg_tokens_per_s"] == 80.25 and result["tg_tokens"] == 16 and result["tg_stddev"] == 0.5
    assert result["pp_tokens_per_s"] == 640.5 and result["pp_tokens"] == 64
    assert result["n_threads"] == 2 and result["backends"] == "CPU"
    assert len(result["tests"]) == 2


def test_tg_only():
    tests = [t for t in json.loads(SAMPLE) if t["n_gen"]]
    result = llama_bench.parse_llama_bench_json(json.dumps(tests))
    assert "pp_tokens_per_s" not in result and result["tg_tokens_per_s"] == 80.25


# ninja's link command for llama-bench in a static build of this llama.cpp (ninja -t commands).
LINK = (
    ": && /usr/bin/c++ -O3 -DNDEBUG  tools/llama-bench/CMakeFiles/llama-bench.dir/main.cpp.o"
    " -o bin/llama-bench"
    "  tools/llama-bench/libllama-bench-impl.a  common/libllama-common.a  common/libllama-common-base.a"
    "  vendor/cpp-httplib/libcpp-httplib.a  src/libllama.a  ggml/src/libggml.a  -ldl  ggml/src/libggml-cpu.a"
    "  ggml/src/libggml-base.a  -lm  /usr/lib/gcc/x86_64-linux-gnu/12/libgomp.so"
    "  /usr/lib/x86_64-linux-gnu/libpthread.a && :"
)


def test_link_to_the_wheel_replaces_only_llama_and_ggml():
    lib = Path("/venv/site-packages/llama_cpp/lib")
    args, inputs = llama_bench.wheel_link_args(LINK, lib)
    assert args[0] == "/usr/bin/c++" and args[-1] == f"-Wl,-rpath,{lib}"
    for name in ("libllama", "libggml", "libggml-cpu", "libggml-base"):
        assert str(lib / f"{name}.so") in args
    assert not [a for a in args if a.startswith(("src/", "ggml/"))]
    assert inputs == [
        "tools/llama-bench/CMakeFiles/llama-bench.dir/main.cpp.o",
        "tools/llama-bench/libllama-bench-impl.a",
        "common/libllama-common.a",
        "common/libllama-common-base.a",
        "vendor/cpp-httplib/libcpp-httplib.a",
    ]
    assert "common/libllama-common.a" in args and "/usr/lib/x86_64-linux-gnu/libpthread.a" in args


def test_an_unexpected_link_command_is_refused():
    with pytest.raises(llama_bench.BenchBuildError, match="unexpected link command"):
        llama_bench.wheel_link_args(": && c++ main.o -o bin/llama-bench && :", Path("/lib"))


def test_wheel_builds_are_cached_per_lib_folder(tmp_path):
    a = llama_bench.cached_path(tmp_path, "0.3.36", "cpu", None, Path("/a/lib"))
    b = llama_bench.cached_path(tmp_path, "0.3.36", "cpu", None, Path("/b/lib"))
    source = llama_bench.cached_path(tmp_path, "0.3.36", "cpu", None, None)
    assert len({a, b, source}) == 3 and a.parent.name.startswith("wheel-")
    assert a.name == "llama-bench"


def test_the_wheel_of_this_interpreter_is_found():
    libdir, version = llama_bench.wheel_libdir(sys.executable)
    assert (libdir / "libllama.so").exists() and version == install.PINNED_VERSION
