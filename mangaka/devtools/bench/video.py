"""Motion comic: seconds of drawing and encoding per second of video at 1080×1920, 24 fps, and the
peak memory of a short and a five-times-longer video, each rendered in a process of its own.

The chapter is made up here: panels of textured pictures (drawn and saved as PNG files, opened
per shot as the ``video`` command does), two lines each with burned subtitles, and a looped music
track under them. No voice clips: they are held decoded as given (a line's clip is the input's
size), so they would grow with the video by design; the figure is about what the renderer adds.
"""

from __future__ import annotations

import json
import logging
import math
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ... import procs

log = logging.getLogger(__name__)

SHOT_SECONDS = 5.0  # what a panel with two short lines lasts (two lines, their gaps, lead in and out)


def _panels(seconds: float) -> int:
    """The panels of a made-up chapter about ``seconds`` long."""
    return max(1, math.ceil(seconds / SHOT_SECONDS))


def _screenplay(panels: int) -> dict[str, Any]:
    shots = ("close_up", "wide", "medium", "establishing", "full", "medium_close_up")
    dialogue, cells = [], []
    for i in range(panels):
        ids = [f"d{2 * i + 1}", f"d{2 * i + 2}"]
        line = f"Line {i + 1}: the ferry is late again."
        dialogue.append({"id": ids[0], "speaker": "mei", "line": line, "emotion": "worried"})
        dialogue.append(
            {"id": ids[1], "speaker": "narrator", "line": "The river rose.", "emotion": "narration"}
        )
        cells.append(
            {
                "id": f"p{i + 1}",
                "shot": shots[i % len(shots)],
                "angle": "eye_level",
                "action": "Mei waits on the pier.",
                "characters": ["mei"],
                "expression": "",
                "background": "pier",
                "lighting": "",
                "props": [],
                "dialogue": ids,
            }
        )
    return {
        "version": 1, "title": "Bench", "language": "en",
        "characters": [{"id": "mei", "name": "Mei", "appearance": "short black hair"}],
        "dialogue": dialogue, "panels": cells,
    }  # fmt: skip


def _pictures(folder: Path, panels: int) -> list[Path]:
    from PIL import Image, ImageChops, ImageDraw, ImageFilter  # loaded only to draw

    base = Image.merge(
        "RGB", [Image.effect_noise((768, 1024), s).filter(ImageFilter.GaussianBlur(2)) for s in (40, 60, 80)]
    )
    paths = []
    for i in range(panels):
        image = ImageChops.offset(base, 41 * i, 67 * i)
        ImageDraw.Draw(image).ellipse((200 + i % 50, 250, 560, 640), outline=(255, 255, 255), width=6)
        paths.append(folder / f"p{i:04d}.png")
        image.save(paths[-1])
    return paths


def worker(seconds: float, folder: str) -> dict[str, Any]:
    """Renders a made-up chapter of about ``seconds`` in this process; its figures."""
    import numpy as np  # the music track

    from ...screenplay.validate import screenplay_model  # the worker's process only
    from ...video.audio import SAMPLE_RATE, Clip  # numpy, PyAV: the worker's process only
    from ...video.motion import plan_motion_comic, write_motion_comic  # Pillow, PyAV: likewise
    from ...video.options import RenderOptions  # the worker's process only
    from ...video.pictures import PanelFiles  # Pillow: the worker's process only

    panels = _panels(seconds)
    sp = screenplay_model(_screenplay(panels))
    tone = np.arange(30 * SAMPLE_RATE, dtype=np.float32) / SAMPLE_RATE
    music = Clip((0.3 * np.sin(2 * np.pi * 220 * tone)).astype(np.float32))
    paths = sorted(Path(folder).glob("p*.png"))  # drawn by the parent: not this process's memory
    plan = plan_motion_comic(sp, PanelFiles(paths), music=music)
    started = time.perf_counter()
    result, _files = write_motion_comic(plan, Path(folder) / "bench.mp4", RenderOptions())
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"video_seconds": result.seconds, "elapsed": elapsed, "peak_mib": peak, "panels": panels}


def _run(seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mangaka-bench-video-") as tmp:
        _pictures(Path(tmp), _panels(seconds))
        code = f"from mangaka.devtools.bench.video import main; main({seconds!r}, {tmp!r})"
        run = procs.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=3600)
        if run.returncode != 0:
            raise RuntimeError(f"the video benchmark's worker failed: {run.stderr[-2000:]}")
        return json.loads(run.stdout.strip().splitlines()[-1])


def video_render(quick: bool) -> dict[str, Any]:
    """``video_*``: the work per second of video and the peak memory of two lengths, 1 and 5
    minutes (``--quick``: 12 and 60 seconds)."""
    short, long = (12.0, 60.0) if quick else (60.0, 300.0)
    a, b = _run(short), _run(long)
    return {
        "video_short_seconds": a["video_seconds"],
        "video_long_seconds": b["video_seconds"],
        "video_work_per_second_short": a["elapsed"] / a["video_seconds"],
        "video_work_per_second_long": b["elapsed"] / b["video_seconds"],
        "video_peak_mib_short": a["peak_mib"],
        "video_peak_mib_long": b["peak_mib"],
        "video_peak_long_over_short": b["peak_mib"] / a["peak_mib"],
    }


def main(seconds: float, folder: str) -> None:
    """The worker's entry: its figures as one JSON line on stdout."""
    logging.basicConfig(level=logging.WARNING)
    sys.stdout.write(json.dumps(worker(seconds, folder)) + "\n")
