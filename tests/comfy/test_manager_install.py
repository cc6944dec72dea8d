"""ComfyUI-Manager installs the pack as it does for a user: the real Manager (``comfyui-manager``
4.3 from PyPI, installed at setup by tests/comfy_env.py in a venv layered over ComfyUI's; its
``cm-cli``) installs this repository from a git URL into a ComfyUI 0.3.75 of its own, runs the
pack's install step (requirements.txt one ``pip install <line>`` at a time, then install.py, which
installs the llama-cpp-python wheel native/install.py built before rather than compiling one; pip
may use no index), ComfyUI loads the pack, and uninstalling it leaves ComfyUI loading cleanly.

The git URL is a bare clone of this checkout's HEAD (committed work only) as ``file://localhost/…``
(the Manager refuses a URL without a host). cm-cli finds ComfyUI's folders from ``COMFYUI_PATH``,
never from ``--base-directory``, so the test works on a copy of ComfyUI's tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.comfy.harness import CHECKOUT, PACK_FOLDER, ComfyInstall, ComfyServer, foreign_python_free_env
from tests.comfy_env import layered_venv, site_packages, write_constraints

NODE = "MangakaComposePage"


def cm_cli(python, *args: str, env: dict, cwd) -> str:
    """cm-cli's output; it exits 0 even when an install fails, so the callers read what it says."""
    done = subprocess.run(
        [str(python), "-m", "cm_cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=900, start_new_session=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def test_the_real_manager_installs_loads_and_uninstalls_the_pack(comfy_install, tmp_path):
    if comfy_install.manager is None or not comfy_install.manager.exists():
        message = f"no ComfyUI-Manager (python tests/comfy_env.py installs it): {comfy_install.manager}"
        if os.environ.get("MANGAKA_REQUIRE_COMFY") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    python = layered_venv(comfy_install.manager, tmp_path / "venv")  # what it installs lands here
    comfy = tmp_path / "ComfyUI"
    shutil.copytree(comfy_install.comfy_dir, comfy, symlinks=True)
    remote = tmp_path / "repos" / f"{PACK_FOLDER}.git"  # the Manager names the folder after it
    subprocess.run(["git", "clone", "--quiet", "--bare", str(CHECKOUT), str(remote)], check=True, timeout=300)
    env = foreign_python_free_env()
    env.update(
        COMFYUI_PATH=str(comfy),
        PIP_NO_INDEX="1",  # nothing from an index: installed already, or the cached wheel
        PIP_CONSTRAINT=str(write_constraints(tmp_path)),  # torch stays (the Manager never moves it)
        GIT_TERMINAL_PROMPT="0",
        COLUMNS="250",  # rich wraps cm-cli's lines at 80 columns otherwise
        TQDM_DISABLE="1",
    )

    said = cm_cli(python, "install", f"file://localhost{remote}", env=env, cwd=tmp_path)
    pack = comfy / "custom_nodes" / PACK_FOLDER
    assert "[INSTALLED]" in said and "Installation was successful." in said, said[-3000:]
    assert "install script failed" not in said, said[-3000:]
    assert (pack / ".git").is_dir() and (pack / "__init__.py").is_file()
    requirements = (pack / "requirements.txt").read_text(encoding="utf-8")
    lines = [line.split("#", 1)[0].strip() for line in requirements.splitlines()]
    ran = re.findall(r"'-m', 'pip', 'install', '([^']+)'\]", said)
    assert ran == [line for line in lines if line], said[-3000:]  # each line, in order
    # install.py: the wheel native/install.py built before, installed on top, not compiled again.
    assert "Install: install script" in said and "using cached wheel" in said, said[-3000:]
    assert "Building wheel for llama" not in said and "llama_cpp_python" not in ",".join(ran)
    assert (site_packages(python) / "llama_cpp").is_dir()

    installed = ComfyServer(ComfyInstall(comfy, python), comfy, packs={})
    with installed:
        assert NODE in installed.object_info(), installed.log_tail()
        assert installed.import_failures() == [], installed.log_tail()

    said = cm_cli(python, "uninstall", PACK_FOLDER, env=env, cwd=tmp_path)
    assert "[UNINSTALLED]" in said and not pack.exists(), said[-3000:]
    removed = ComfyServer(ComfyInstall(comfy, python), comfy, packs={})
    with removed:
        info = removed.object_info()
        assert NODE not in info and "KSampler" in info
        assert removed.import_failures() == [], removed.log_tail()
