"""Ctrl-C and SIGTERM while llama.cpp runs: recorded, never raised inside it.

While the main thread is inside llama.cpp, Python runs a signal handler at the next bytecode it
executes, which is one of the library's ctypes callbacks (the abort check during a decode, the log
callback during a load). A ``KeyboardInterrupt`` raised there is printed and ignored by ctypes (and
during a quiet load the print goes to the silenced stderr): the interrupt would be lost.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from .. import procs

# The handlers that raise KeyboardInterrupt, which InterruptToAbort takes the place of.
RAISING = ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, procs.interrupt_handler))


class InterruptToAbort:
    """Ctrl-C (or SIGTERM, which the command line turns into an interrupt: ``procs``) during a
    generation or a model load, turned into llama.cpp's abort flag (a load's progress callback
    reads it too); ``KeyboardInterrupt`` is raised once llama.cpp has stopped (``raise_if_hit``),
    from Python, not inside one of its callbacks. Only in the main thread (where signals arrive)
    and only in place of the handlers that would raise it (Python's own for SIGINT,
    ``procs.interrupt_handler`` for SIGTERM); elsewhere (ComfyUI's worker) it does nothing and
    ``cancel`` stops the run."""

    def __init__(self, flag: list[bool]) -> None:
        self.flag = flag
        self.hit = False
        self._previous: dict[int, Any] = {}

    def _handler(self, _signum: int, _frame: object) -> None:
        self.hit = True
        self.flag[0] = True

    def __enter__(self) -> InterruptToAbort:
        if threading.current_thread() is threading.main_thread():
            for signum, raising in RAISING:
                if signal.getsignal(signum) is raising:  # ours for the decode
                    self._previous[signum] = raising
                    signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def raise_if_hit(self) -> None:
        if self.hit:
            raise KeyboardInterrupt
