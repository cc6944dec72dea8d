"""Linear growth shown without the wall clock: the CPU time of this thread (other work on a
shared machine, or another thread of this process, does not inflate it) at a size n/8 and n, best
of three taken in turn, with Python's cyclic garbage collector paused while a call is timed (its
passes walk every object the whole test session has made, so their cost follows the session, not
the code measured: in a full CI run a 100,000-brace text measured 39x its eighth, 12x alone).
Linear work gives about 8x; quadratic work 64x; callers assert below 32x."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

RATIO = 8
BOUND = 32  # between linear (8x) and quadratic (64x), with 4x room for noise


def cpu_seconds_per_call(fn: Callable[[], object], at_least: float = 0.02) -> float:
    """CPU time of this process per call of ``fn``, calls repeated until ``at_least`` seconds
    have been counted (so a sub-millisecond call is still measured well, on any clock tick)."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        calls, start = 0, time.thread_time()
        while True:
            fn()
            calls += 1
            used = time.thread_time() - start
            if used >= at_least:
                return used / calls
    finally:
        if was_enabled:
            gc.enable()


def small_and_large(call: Callable[[int], object], n: int) -> tuple[float, float]:
    """The best CPU seconds of ``call(n // RATIO)`` and of ``call(n)``, three of each, in turn."""
    small = large = float("inf")
    for _ in range(3):
        small = min(small, cpu_seconds_per_call(lambda: call(n // RATIO)))
        large = min(large, cpu_seconds_per_call(lambda: call(n)))
    return small, large


def assert_linear(call: Callable[[int], object], n: int, slack: float = 0.001, tries: int = 3) -> None:
    """``call(n)`` costs under ``BOUND`` times ``call(n // RATIO)`` (plus ``slack`` seconds), in at
    least one of ``tries`` measurements: on a loaded two-core machine the CPU time of one call can
    double (a sibling hyperthread, a cold cache), while quadratic work is over the bound every time."""
    seen = []
    for _ in range(tries):
        small, large = small_and_large(call, n)
        if large < BOUND * small + slack:
            return
        seen.append(f"{small * 1e3:.2f} ms at n/{RATIO}, {large * 1e3:.2f} ms at n")
    raise AssertionError("; ".join(seen))
