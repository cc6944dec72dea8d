"""The tree before issue 53's move (commands into ``mangaka/cli/``, one registry of shown options),
read from git history, for the tests that show the move changed nothing a user sees: every
command's flags and help, its error messages (tests/unit/test_surfaces.py) and every node's
widgets (tests/comfy/test_widgets_before.py).

Without the history (a shallow clone, an exported tarball) those tests skip, saying why.
"""

from __future__ import annotations

import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BEFORE_THE_MOVE = "a97f1c072eed6d1ff3103f6507967d450ed69a88"


def tree_before(dest: Path, *paths: str) -> Path:
    """``paths`` of the tree before the move, unpacked into ``dest`` (all of it without paths)."""
    archive = subprocess.run(
        ["git", "archive", BEFORE_THE_MOVE, *paths], cwd=ROOT, capture_output=True, timeout=120
    )
    if archive.returncode != 0:
        pytest.skip(f"no git history here to compare with: {archive.stderr.decode()[-200:]}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest
