"""The versions the code depends on: requirements.txt (what ComfyUI-Manager installs before it runs
install.py) and pyproject.toml list the same dependencies but llama-cpp-python, which install.py
installs, pinned to the one release whose internals ``mangaka.llm.patches`` patches, the one
``native/install.py`` builds."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.requirements import Requirement

from mangaka.errors import BackendMissingError
from mangaka.llm.native import import_llama_cpp
from mangaka.llm.patches import PATCHED_VERSION, check_version

ROOT = Path(__file__).resolve().parents[2]


def _requirements_txt() -> dict[str, Requirement]:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    found = [Requirement(line) for line in map(str.strip, lines) if line and not line.startswith("#")]
    return {r.name.lower(): r for r in found}


def _pyproject() -> dict[str, Requirement]:
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {r.name.lower(): r for r in map(Requirement, data["project"]["dependencies"])}


def test_requirements_and_pyproject_list_the_same_dependencies():
    txt, toml = _requirements_txt(), _pyproject()
    assert "llama-cpp-python" not in txt  # pip would compile it before install.py installs the build
    toml.pop("llama-cpp-python")
    assert sorted(txt) == sorted(toml), "requirements.txt and pyproject.toml list different packages"
    for name, req in txt.items():
        assert (req.specifier, req.marker and str(req.marker)) == (
            toml[name].specifier,
            toml[name].marker and str(toml[name].marker),
        ), name


def test_llama_cpp_python_is_pinned_to_the_patched_release_everywhere():
    spec = importlib.util.spec_from_file_location("mangaka_native_install", ROOT / "native" / "install.py")
    install = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(install)
    assert install.PINNED_VERSION == PATCHED_VERSION
    assert str(_pyproject()["llama-cpp-python"].specifier) == f"=={PATCHED_VERSION}"
    installed = import_llama_cpp().__version__
    assert installed == PATCHED_VERSION, f"the test venv has llama-cpp-python {installed}"
    check_version(import_llama_cpp())  # the installed one passes


@pytest.mark.parametrize("other", ["0.3.37", "0.4.0", "0.3.16"])
def test_another_llama_cpp_python_is_refused_naming_both_versions(other):
    with pytest.raises(BackendMissingError) as caught:
        check_version(SimpleNamespace(__version__=other))
    message = str(caught.value)
    assert f"llama-cpp-python {other} is installed" in message
    assert PATCHED_VERSION in message and "native/install.py" in message


def test_the_install_step_is_native_install_with_its_arguments():
    """install.py (ComfyUI-Manager's install step, run in the pack's folder) is native/install.py:
    the same arguments give the same wheel cache folder, and a wrong one is refused by it."""

    def run(script: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / script), *args], capture_output=True, text=True)

    for target in ("cpu", "cuda", "loongarch"):
        via_step = run("install.py", "--print-key", "--target", target, "--cuda-arch", "89")
        direct = run("native/install.py", "--print-key", "--target", target, "--cuda-arch", "89")
        assert via_step.returncode == direct.returncode == 0, via_step.stderr
        assert via_step.stdout == direct.stdout and target in via_step.stdout
    wrong = run("install.py", "--target", "tpu")
    assert wrong.returncode == 2 and "invalid choice: 'tpu'" in wrong.stderr
