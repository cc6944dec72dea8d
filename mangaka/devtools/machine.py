"""The processor a figure or a test run was taken on: its name and the instruction-set features
that decide the speed of what it runs (bf16 and int8 matrix products above all). Standard library."""

from __future__ import annotations

import platform
import re
from pathlib import Path

# What decides a CPU's speed here: AVX2 (every kernel), AVX-512 (llama.cpp's widest), native bf16
# (AVX-512 BF16, AMX: torch's bf16 is emulated, ~70x slower, without them) and VNNI (int8 dots).
FEATURES = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni")


def cpu_name() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    found = re.search(r"^model name\s*:\s*(.+)$", _cpuinfo(), re.MULTILINE)
    return found.group(1).strip() if found else platform.processor() or "unknown"


def cpu_features() -> list[str]:
    """Which of :data:`FEATURES` this processor has, in that order ([] when it cannot be read)."""
    found = re.search(r"^flags\s*:(.*)$", _cpuinfo(), re.MULTILINE)
    have = set(found.group(1).split()) if found else set()
    return [flag for flag in FEATURES if flag in have]


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""
