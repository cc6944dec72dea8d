"""Child processes that never outlive their run.

Every program the pack starts (bench parts, ``lora/measure.py`` and its variants, servers, builds,
the LoRA Python) is started here, in a process group of its own. On a timeout, an interrupt
(Ctrl-C, or SIGTERM turned into one by :func:`terminate_as_interrupt`) or any failure, the *whole*
group is ended: SIGTERM first, so a Python child can end its own children in turn, then SIGKILL
after a grace period. Killing only the group's leader is not enough: its children are reparented to
init and keep running (a killed benchmark once left its worker busy on one of two cores).

Standard library only: ``native/`` and ``lora/`` scripts load this file by its path (they run in
interpreters that may not have the pack installed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

GRACE_S = 5.0


def popen(cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen`` in a new session (its own process group); end it with :func:`end_group`."""
    kwargs.pop("start_new_session", None)
    return subprocess.Popen(list(cmd), start_new_session=True, **kwargs)


def _live() -> Iterator[tuple[int, list[str]]]:
    """Each live process (zombies not counted) with its ``/proc/PID/stat`` fields after the name
    (state, ppid, pgrp, …); nothing where there is no procfs."""
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if fields[0] != "Z":
            yield int(entry), fields


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still there (zombies not counted)."""
    if os.path.isdir("/proc"):
        return any(int(fields[2]) == pgid for _, fields in _live())
    try:  # no procfs: ask the kernel whether the group can be signalled
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def end_group(proc: subprocess.Popen, grace: float = GRACE_S, first: int = signal.SIGTERM) -> None:
    """End every process of ``proc``'s group: ``first`` (SIGTERM), up to ``grace`` seconds for the
    group to go, then SIGKILL, and again up to ``grace`` seconds until none is left. Safe to call
    on a group that is already gone; ``proc`` is reaped."""
    pgid = proc.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, first)
    deadline = time.monotonic() + (grace if first != signal.SIGKILL else 0)
    while time.monotonic() < deadline:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
        if not group_alive(pgid):
            break
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    # SIGKILL is delivered at once but a busy machine may take a moment to end each process: wait
    # (up to ``grace``) until none of the group is left, so that nothing runs on after this returns
    deadline = time.monotonic() + grace
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
        if (proc.returncode is not None and not group_alive(pgid)) or time.monotonic() >= deadline:
            break


def run(
    cmd: Sequence[str],
    *,
    timeout: float | None = None,
    input: str | bytes | None = None,  # subprocess.run's name
    capture_output: bool = False,
    check: bool = False,
    grace: float = GRACE_S,
    **kwargs: Any,
) -> subprocess.CompletedProcess:
    """``subprocess.run`` with the child in its own process group, ended whole on a timeout, an
    interrupt or an error; once the child has exited, anything it left in its group is ended too.

    Raises ``subprocess.TimeoutExpired`` (after the group is gone) like ``subprocess.run``."""
    if capture_output:
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
    if input is not None:
        kwargs.setdefault("stdin", subprocess.PIPE)
    proc = popen(cmd, **kwargs)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            left = 0.5 if deadline is None else min(0.5, max(deadline - time.monotonic(), 0.0))
            try:
                out, err = proc.communicate(input, timeout=left)
                break
            except subprocess.TimeoutExpired:
                input = None  # sent on the first call
                if proc.poll() is not None:  # it exited; something it left holds the pipes
                    end_group(proc, grace=0.5)
                elif deadline is not None and time.monotonic() >= deadline:
                    raise
    except subprocess.TimeoutExpired:
        end_group(proc, grace)
        try:  # what it printed before; a descendant in another session may still hold the pipe
            out, err = proc.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            out = err = None
        raise subprocess.TimeoutExpired(proc.args, timeout, output=out, stderr=err) from None
    except BaseException:
        end_group(proc, grace)
        raise
    if group_alive(proc.pid):  # what the child left behind in its group (usually nothing)
        end_group(proc, grace=0.5)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def interrupt_handler(signum: int, frame: object) -> None:
    """SIGTERM's handler within :func:`terminate_as_interrupt` (``llm/inprocess.py`` recognises it
    and, like Python's own SIGINT handler, routes it to llama.cpp's abort flag during a decode)."""
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` in the main thread, so that the
    ``finally`` of :func:`run` ends this program's own child groups before it exits (a group ended
    from outside gets SIGTERM first). Does nothing off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def processes_with(name: str, value: str) -> dict[int, str]:
    """The live processes (zombies not counted) whose environment holds ``name=value``, as
    pid → command line: what a run that exported a marker left behind (Linux; {} elsewhere)."""
    wanted = f"{name}={value}".encode()
    found: dict[int, str] = {}
    for pid, _ in _live():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if wanted not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found[pid] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found
