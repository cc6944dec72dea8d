"""The demo's wall time, run as a user runs it."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ... import procs
from ...errors import MangakaError
from ...paths import PACK_ROOT


def demo_run(threads: int) -> dict[str, Any]:
    """The README's first command after setup (``python -m mangaka demo``): its wall time, end to end.

    Run as the user runs it, in a fresh process (model load, both calls, the storyboard page);
    ``--threads`` is the bench's, which defaults to every core like the demo's own default.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo.screenplay.json"
        command = [sys.executable, "-m", "mangaka", "demo", "--threads", str(threads), "-o", str(out)]
        started = time.perf_counter()
        run = procs.run(command, cwd=PACK_ROOT, capture_output=True, text=True, timeout=1800)
        seconds = time.perf_counter() - started
        if run.returncode != 0:
            tail = run.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise MangakaError(f"bench: the demo failed (exit {run.returncode}): {tail[0]}")
        lines = run.stderr.splitlines()
        retries = sum(1 for line in lines if " invalid (" in line or " cut off at " in line)
        repairs = sum(1 for line in lines if " repaired " in line)
    return {"demo_seconds": seconds, "demo_retries": retries, "demo_repairs": repairs}
