"""The growth check itself (tests/growth.py): it tells quadratic work from linear work, and another
busy thread of the process or a large heap does not move its figures."""

from __future__ import annotations

import threading

import pytest

from tests.growth import assert_linear


def _linear(n: int) -> int:
    return sum(range(n))


def _quadratic(n: int) -> int:
    return sum(i ^ j for i in range(n) for j in range(n))


def test_quadratic_work_is_caught():
    with pytest.raises(AssertionError, match="at n/8"):
        assert_linear(_quadratic, 1600)


def test_linear_work_passes_beside_a_busy_thread_and_a_large_heap():
    heap = [[i] for i in range(1_000_000)]  # objects the collector would walk
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    busy = threading.Thread(target=spin, daemon=True)
    busy.start()
    try:
        assert_linear(_linear, 800_000)
    finally:
        stop.set()
        busy.join()
    assert len(heap) == 1_000_000
