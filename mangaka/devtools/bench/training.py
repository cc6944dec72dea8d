"""What a training step of the manga LoRA costs in memory, from ``lora/measure.py``.

Training runs in the LoRA Python (torch, transformers, peft: ``lora/requirements.txt``), never in
the pack's; this part runs ``lora/measure.py`` there: ``MANGAKA_LORA_PYTHON``, else the checkout's
``.venv-lora`` (``tests/run.sh`` makes it). Without one the figures are ``None``, with a warning
naming how to make it. ``--quick`` measures a narrow model (hidden 256, 16 experts) at 1024 tokens instead of
Qwen3.5-35B-A3B's real width, which needs about 12 GB of memory and several minutes.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

from ... import procs
from ...errors import MangakaError
from ...paths import PACK_ROOT

log = logging.getLogger(__name__)

SCRIPT = PACK_ROOT / "lora" / "measure.py"
VARIANTS = ("on_answer", "off_answer", "on_labels", "off_labels")
KEYS = (
    "lora_train_width",
    "lora_train_products",
    "lora_train_matmul_ms_bf16",
    "lora_train_matmul_ms_fp32",
    "lora_train_layers",
    "lora_train_tokens",
    *(f"lora_train_step_gib_{v}" for v in VARIANTS),
    "lora_train_labels_over_answer_memory",
    "lora_train_checkpointing_off_over_on_memory",
    "lora_train_checkpointing_time_ratio",
    *(f"lora_train_whole_model_8k_gib_{v}" for v in VARIANTS),
    "lora_train_parameters_whole_model",
)
TIMEOUT = 3600.0


def lora_python() -> Path | None:
    """``MANGAKA_LORA_PYTHON``, else the checkout's ``.venv-lora``; ``None`` when neither is there."""
    named = os.environ.get("MANGAKA_LORA_PYTHON", "")
    for candidate in (Path(named) if named else None, PACK_ROOT / ".venv-lora" / "bin" / "python"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def lora_train(quick: bool) -> dict[str, Any]:
    python = lora_python()
    if python is None:
        log.warning(
            "no LoRA Python (MANGAKA_LORA_PYTHON, or .venv-lora made by `bash tests/run.sh`, or "
            "`python -m venv .venv-lora && .venv-lora/bin/pip install -r lora/requirements.txt`): "
            "no lora_train figures"
        )
        return dict.fromkeys(KEYS)
    # --quick: a narrow model at 1024 tokens (the ratios the tests check hold there, at half the cost)
    cmd = [str(python), str(SCRIPT), "--json", *(["--small", "--tokens", "1024"] if quick else [])]
    try:
        done = procs.run(cmd, cwd=PACK_ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise MangakaError(f"lora/measure.py did not finish in {TIMEOUT:.0f} s") from None
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise MangakaError(f"lora/measure.py failed ({python}): {tail[0]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    top = str(max(found["tokens"]))
    figures: dict[str, Any] = {
        "lora_train_width": "small" if found["small"] else "Qwen3.5-35B-A3B",
        "lora_train_products": found["products"],
        "lora_train_matmul_ms_bf16": found["matmul_ms"]["bf16"],
        "lora_train_matmul_ms_fp32": found["matmul_ms"]["float32"],
        "lora_train_layers": found["layers"],
        "lora_train_tokens": found["tokens"],
        "lora_train_labels_over_answer_memory": round(found["labels_over_answer_memory"], 3),
        "lora_train_checkpointing_off_over_on_memory": round(found["checkpointing_off_over_on_memory"], 3),
        "lora_train_checkpointing_time_ratio": round(found["checkpointing_time_ratio"], 3),
        "lora_train_parameters_whole_model": found["lora_parameters_whole_model"],
    }
    for variant in VARIANTS:
        figures[f"lora_train_step_gib_{variant}"] = found["measured_gib"][variant][top]
        figures[f"lora_train_whole_model_8k_gib_{variant}"] = found["whole_model_step_gib"][variant]
    return figures
