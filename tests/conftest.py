"""Shared test setup: each test gets the marker of its tier folder (unit, model, comfy, bench, native,
lora); the summary gives each tier's time and the artifacts kept; and no process a test started may
outlive the run."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

from mangaka import procs

TIERS = ("unit", "model", "comfy", "bench", "native", "lora")
# Every process started during the tests inherits this marker (environment variable), so the ones
# still running at the end can be found, however far they were reparented.
MARKER = "MANGAKA_TEST_RUN"
os.environ[MARKER] = str(os.getpid())
_tier_seconds: dict[str, float] = defaultdict(float)
# Where tests keep what a person looks at after the run (the browser's screenshots): outside pytest's
# temporary folders, which are removed; MANGAKA_TEST_ARTIFACTS overrides it.
ARTIFACTS = Path(
    os.environ.get("MANGAKA_TEST_ARTIFACTS") or Path(__file__).resolve().parents[1] / "test-artifacts"
)


@pytest.fixture
def artifacts() -> Path:
    """The folder a test keeps its artifacts in (``ARTIFACTS``), made on first use."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def _tier(path: str) -> str:
    parts = Path(path).parts
    return next((tier for tier in TIERS if tier in parts), "other")


def pytest_report_header(config: pytest.Config) -> str:
    """The processor: several tests' cost (bf16, the widest SIMD) depends on its features."""
    from mangaka.devtools.machine import cpu_features, cpu_name

    return f"cpu: {cpu_name()}; features: {', '.join(cpu_features()) or 'none of AVX2/AVX-512/AMX'}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = _tier(str(item.fspath))
        if tier != "other":
            item.add_marker(getattr(pytest.mark, tier))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _tier_seconds[_tier(report.nodeid)] += report.duration  # setup, call and teardown


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A process started by a test and still running now is a leak: it is named, ended, and the run
    fails. (Stragglers get a few seconds to finish exiting first.)"""
    deadline = time.monotonic() + 10
    left = procs.processes_with(MARKER, os.environ[MARKER])
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = procs.processes_with(MARKER, os.environ[MARKER])
    if not left:
        return
    session.config._mangaka_leaked = left  # type: ignore[attr-defined]
    for pid in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if _tier_seconds:
        tiers = [tier for tier in (*TIERS, "other") if tier in _tier_seconds]
        shown = ", ".join(f"{tier} {_tier_seconds[tier]:.0f} s" for tier in tiers)
        terminalreporter.write_line(f"time per tier: {shown}")
    if ARTIFACTS.is_dir() and any(ARTIFACTS.iterdir()):
        terminalreporter.write_line(f"artifacts kept in {ARTIFACTS}")
    leaked = getattr(config, "_mangaka_leaked", None)
    if leaked:
        terminalreporter.write_line(
            f"FAILED: {len(leaked)} process(es) started by the tests outlived them (ended now):", red=True
        )
        for pid, cmd in leaked.items():
            terminalreporter.write_line(f"  {pid}: {cmd[:300]}", red=True)
