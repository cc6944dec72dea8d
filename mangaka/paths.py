"""Where the pack's own files and its cache live."""

from __future__ import annotations

import os
from pathlib import Path

PACK_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """``$MANGAKA_CACHE``, or ``~/.cache/mangaka``: assembled models, built binaries, wheels."""
    return Path(os.environ.get("MANGAKA_CACHE", Path.home() / ".cache" / "mangaka"))
