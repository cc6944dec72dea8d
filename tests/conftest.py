"""Shared test setup: each test gets the marker of its tier folder (unit, model, comfy, bench, native,
lora)."""

from __future__ import annotations

from pathlib import Path

import pytest

TIERS = ("unit", "model", "comfy", "bench", "native", "lora")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).parts
        for tier in TIERS:
            if tier in parts:
                item.add_marker(getattr(pytest.mark, tier))
