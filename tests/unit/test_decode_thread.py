"""The decode thread (``mangaka.llm.decode_thread``) without a model: an interrupt of the caller
stops the decode before it is raised, a decode that asks for another runs it in place, and
``close`` ends the thread."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from mangaka.llm.decode_thread import DecodeThread


def test_an_interrupted_wait_stops_the_decode_before_raising():
    decoder, flag = DecodeThread(), [False]
    started, steps = threading.Event(), []

    def decode() -> str:
        started.set()
        deadline = time.monotonic() + 60  # a guard against a hang, not a measure
        while not flag[0] and time.monotonic() < deadline:
            steps.append(1)
            time.sleep(0.001)
        return "stopped" if flag[0] else "ran out"

    def interrupt() -> None:
        started.wait(30)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            decoder.run(decode, flag)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert flag == [True]
    count = len(steps)
    time.sleep(0.05)
    assert len(steps) == count, "the decode went on after the interrupt was raised"
    decoder.close()


def test_results_errors_and_a_nested_decode():
    decoder, flag = DecodeThread(), [False]
    outer = decoder.run(lambda: (threading.get_ident(), decoder.run(threading.get_ident, flag)), flag)
    assert outer[0] == outer[1] != threading.get_ident()
    with pytest.raises(ValueError, match="bad token"):
        decoder.run(lambda: (_ for _ in ()).throw(ValueError("bad token")), flag)
    assert flag == [False]  # an error is not an interrupt
    names = {t.name for t in threading.enumerate() if t.ident == outer[0]}
    assert names and next(iter(names)).startswith("mangaka-decode")
    decoder.close()
    assert all(t.ident != outer[0] for t in threading.enumerate())
    assert decoder.run(lambda: 7, flag) == 7  # a closed one starts again when asked
    decoder.close()
