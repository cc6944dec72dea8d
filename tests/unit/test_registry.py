"""Registry-ready: the Comfy Registry's own check of the pack passes (comfy-cli's `comfy node
validate`: pyproject.toml's ``[tool.comfy]`` and ruff's exec/eval/one-line-statement rules), and the
metadata the registry reads names the icon, the ComfyUI versions and the platforms. comfy-cli runs
from its own venv in the cache (tests/run.sh makes it); without one the tests skip, or fail where
``MANGAKA_REQUIRE_COMFY_CLI=1`` (CI)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from PIL import Image

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ICON = ROOT / "web" / "icon.png"

METADATA = """
import json, sys
from comfy_cli.registry.config_parser import extract_node_configuration
c = extract_node_configuration()
sys.stdout.write(json.dumps({
    "icon": c.tool_comfy.icon, "includes": c.tool_comfy.includes, "version": c.project.version,
    "comfyui": c.project.supported_comfyui_version, "os": c.project.supported_os,
    "accelerators": c.project.supported_accelerators,
}))
"""


@pytest.fixture(scope="module")
def comfy_cli() -> Path:
    path = Path(os.environ.get("MANGAKA_COMFY_CLI", "/nonexistent"))
    if not path.is_file():
        why = f"comfy-cli is not installed at {path} (tests/run.sh installs it)"
        if os.environ.get("MANGAKA_REQUIRE_COMFY_CLI") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1", "COLUMNS": "200"}


def test_comfy_node_validate_passes_without_a_warning(comfy_cli: Path, tmp_path: Path):
    run = subprocess.run(
        [str(comfy_cli), "--skip-prompt", "--no-enable-telemetry", "node", "validate"],
        cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-3000:]
    assert "Running security checks" in said
    assert "warning" not in said.lower(), said[-3000:]  # comfy-cli exits 0 on warnings: read them


def test_the_registry_metadata_names_the_icon_versions_and_platforms(comfy_cli: Path, tmp_path: Path):
    python = comfy_cli.parent / "python"
    run = subprocess.run(
        [str(python), "-c", METADATA], cwd=ROOT, env=_env(tmp_path),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    meta = json.loads(run.stdout)
    assert meta["icon"].endswith("/web/icon.png") and "web/icon.png" in meta["includes"]
    assert meta["version"] and meta["comfyui"].startswith(">=")
    assert meta["os"] == ["OS Independent"] and "GPU :: NVIDIA CUDA" in meta["accelerators"]


def test_the_icon_is_a_square_png_in_the_repository():
    with Image.open(ICON) as icon:
        assert icon.format == "PNG" and icon.size[0] == icon.size[1] >= 256
