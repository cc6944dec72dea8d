"""ComfyUI-Manager compatibility: the comfy tier's ComfyUI got the pack the way a user's does
(``native/install.py``, then ``requirements.txt`` one ``pip install <line>`` at a time, as
ComfyUI-Manager runs it; see ``tests/comfy_env.py``), and the pack imports there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.comfy_env import MANAGER_RECORD, manager_lines

ROOT = Path(__file__).resolve().parents[2]


def test_requirements_install_line_by_line_and_the_pack_imports(comfy_install, comfy):
    record_path = comfy_install.comfy_dir.parent / MANAGER_RECORD
    if not record_path.is_file():
        pytest.skip(f"{record_path} is absent: this ComfyUI was not set up by tests/comfy_env.py")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    lines = manager_lines((ROOT / "requirements.txt").read_text(encoding="utf-8"))
    assert [r["line"] for r in record] == lines
    assert all(r.get("returncode") == 0 for r in record), record
    assert any(line.startswith("llama-cpp-python") for line in lines)
    assert comfy.import_failures() == [], comfy.log_tail()
    assert "MangakaComposePage" in comfy.object_info()
