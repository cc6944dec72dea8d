"""Setup steps that ``tests/run.sh`` leaves running beside the tests at the lowest priority (the
loongarch64 build, llama-server): a test that needs one waits for it here.

``tests/run.sh`` starts each with its output in a log and names the log in an environment variable
(``MANGAKA_LOONGARCH_PREPARE``, ``MANGAKA_LLAMA_SERVER_PREPARE``); when the step ends, ``<log>.done``
holds its exit code and seconds. Outside ``tests/run.sh`` the variable is unset and nothing waits."""

from __future__ import annotations

import os
import time
from pathlib import Path


def wait_for(variable: str, what: str, limit: float = 3600) -> None:
    """Wait for the background step whose log ``$variable`` names (at normal priority from now on:
    a test waits on it); fails with its log's end if it failed. Nothing to wait for when unset."""
    if not os.environ.get(variable):
        return
    log = Path(os.environ[variable])
    marker = log.with_name(log.name + ".done")
    run = os.environ.get("MANGAKA_CI_RUN")
    if not marker.exists() and run:
        from mangaka import procs

        for pid in procs.processes_with("MANGAKA_CI_RUN", run):  # the step's cmake, ninja, compilers
            try:
                if os.getpriority(os.PRIO_PROCESS, pid) == 19:
                    os.setpriority(os.PRIO_PROCESS, pid, 0)
            except OSError:
                pass  # ended meanwhile, or not ours to renice: it finishes at its own pace
    deadline = time.monotonic() + limit
    while not marker.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not end in {limit:.0f} s; see {log}")
        time.sleep(2)
    code = int(marker.read_text().split()[0])
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
        raise AssertionError(f"{what} failed (exit {code}); the end of {log}:\n{tail}")
