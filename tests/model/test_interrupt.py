"""Ctrl-C during ``python -m mangaka write`` (issue 19, item 6): the interrupt stops llama.cpp's
decode through its abort flag and is reported once, "interrupted", exit code 130; it never lands
inside the ctypes abort callback ("Exception ignored on calling ctypes callback function"), and no
screenplay, plan or temporary file is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mangaka.demo import demo_model_path

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_while_generating_is_interrupted_exit_130(tmp_path, signum):
    """SIGTERM (a stopped container, a killed queue) ends the command line as Ctrl-C does. The
    embedded SmolLM2 generates for seconds: the tiny random model wrote its whole screenplay (three
    tries cut off at its 4096-token context) before the signal landed on a loaded CI machine."""
    out = tmp_path / "out.json"
    argv = [sys.executable, "-m", "mangaka", "write", str(CHAPTER), "--model", str(demo_model_path()),
            "--threads", "1", "--panels", "auto", "--dialogue", "auto", "-o", str(out)]  # fmt: skip
    # As from a terminal: a test run started in the background (``.ci/run &``) inherits SIGINT
    # ignored, and Python then never turns Ctrl-C into KeyboardInterrupt.
    proc = subprocess.Popen(
        argv, cwd=ROOT, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert proc.stderr is not None
    lines = []
    deadline = time.monotonic() + 120
    for line in proc.stderr:  # wait until tokens are being generated, then press Ctrl-C
        lines.append(line)
        if "generating:" in line or time.monotonic() > deadline:
            break
    assert any("generating:" in line for line in lines), "".join(lines)
    time.sleep(0.3)
    os.kill(proc.pid, signum)
    proc.wait(timeout=60)
    stderr = "".join(lines) + proc.stderr.read()
    assert proc.returncode == 130, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR")]
    assert errors == ["ERROR mangaka: interrupted"], stderr[-3000:]
    assert "Exception ignored" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file


def test_sigterm_during_the_model_load_stops_it_and_is_raised_after(monkeypatch):
    """A signal that lands while llama.cpp loads the model was lost: Python ran its handler inside
    one of the library's ctypes callbacks, where the ``KeyboardInterrupt`` was dropped (and with
    ``verbose=False`` even its message), and the run went on. It now stops the load at the next
    progress call and is raised once llama.cpp has returned. The signal is sent from inside the
    load (at its first progress call), as a ``kill`` from outside lands during a long load."""
    from mangaka import procs
    from mangaka.llm import loading, patches
    from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions
    from mangaka.llm.loading import release_models

    called = patches.LoadProgress._called
    sent = []

    def first_call_sends_sigterm(self, fraction, user_data):
        if not sent:
            sent.append(fraction)
            os.kill(os.getpid(), signal.SIGTERM)
        return called(self, fraction, user_data)

    monkeypatch.setattr(patches.LoadProgress, "_called", first_call_sends_sigterm)
    release_models()
    options = LoadOptions(n_ctx=1536, n_threads=1)
    with procs.terminate_as_interrupt(), pytest.raises(KeyboardInterrupt):
        LlamaCppLLM(demo_model_path(), options)
    assert sent, "the load made no progress call"
    assert signal.getsignal(signal.SIGTERM) is not procs.interrupt_handler  # the block restored it
    assert not loading.cached_models()  # nothing half-loaded is kept
    monkeypatch.undo()
    assert LlamaCppLLM(demo_model_path(), options).model.n_ctx == 1536  # and the next load works
    release_models()
