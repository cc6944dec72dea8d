"""One thread for every decode of a loaded model, whichever thread asks for it.

llama.cpp's CPU backend computes each decode as one OpenMP parallel region, with a barrier between
the graph's nodes (hundreds per token). GNU OpenMP keeps a team of worker threads for each thread
that starts a parallel region, and while the teams of all threads together hold more threads than
the machine has cores, its barriers stop spinning and sleep in the kernel: each barrier then costs
a wake-up. The command line's ``book`` decoded the cast on the main thread and the chapters on a
worker thread, so a second team existed for the rest of the run; on 2 cores with 2 threads a token
of the tiny test model took 17.7 ms instead of 4.1 ms at one thread, and a 16-paragraph chapter
47 s instead of 15 s (more threads made it three times slower). Decoding on one thread per model
keeps one team, whatever thread the caller is (the command line's main thread, a book's chapter
workers, ComfyUI's prompt worker).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_ON_DECODE_THREAD = threading.local()


class DecodeThread:
    """Runs ``fn`` on its own thread, started on first use and ended by ``close``."""

    def __init__(self, name: str = "mangaka-decode") -> None:
        self.name = name
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def run(self, fn: Callable[[], T], abort_flag: list[bool]) -> T:
        """``fn()`` on the decode thread, with the caller's context variables (ComfyUI's progress
        bar finds its node through them). When the wait is interrupted (``KeyboardInterrupt`` in
        the caller, even before the call was handed over), a call not started never starts, and
        one started is stopped through ``abort_flag`` before the interrupt is raised: no decode
        outlives its call."""
        if getattr(_ON_DECODE_THREAD, "active", False):  # a decode asking for another: run it here
            return fn()
        job = _Job(fn, contextvars.copy_context())
        try:
            with self._lock:
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=self.name)
                pool = self._pool
            pool.submit(job.run)
            job.done.wait()
        except BaseException:
            with job.lock:
                job.dropped = True
                started = job.started
            if started and not job.done.is_set():
                abort_flag[0] = True
                job.done.wait()
            raise
        if job.error is not None:
            raise job.error
        return job.result

    def close(self) -> None:
        """End the thread (it is idle: every ``run`` waits for its call)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


class _Job:
    """One call handed to the decode thread; ``dropped`` (by an interrupted caller) before it
    starts means it never runs."""

    def __init__(self, fn: Callable[[], Any], context: contextvars.Context) -> None:
        self.fn, self.context = fn, context
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.started = self.dropped = False
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        with self.lock:
            if self.dropped:
                return
            self.started = True
        _ON_DECODE_THREAD.active = True
        try:
            self.result = self.context.run(self.fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
            self.error = exc
        finally:
            _ON_DECODE_THREAD.active = False
            self.done.set()
