"""The output disk fills mid-book (issue 29): ``python -m mangaka book`` stops with one line naming
the file and the cause, the chapters already written and the bible (the book's state) survive
whole, nothing half-written is left, and once there is room the same command resumes the book.

The disk is a real one: a 16 MiB tmpfs mounted in the test's folder (root may mount; elsewhere the
test skips, saying so). Once chapter 1's screenplay is on it, the test fills what is left with a
filler file, so the next write the book makes meets ``ENOSPC`` as on a full disk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mangaka.devtools.tiny_models import write_model
from tests.model.support import screenplay_files

ROOT = Path(__file__).resolve().parents[2]
# Two short chapters, one panel and one line each: what is tested is the writes, not the writing.
BOOK = """Chapter 1: The Well

Mara drew water from the village well at dawn. "The rope is fraying," she told the goat.

Chapter 2: The Road

Ilse met her at the crossroads. "We leave at noon," she said.
"""


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = shutil.which("mount")
    made = (
        mount and subprocess.run([mount, "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)]).returncode == 0
    )
    if not made:
        pytest.skip("cannot mount a small tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Write zeros into ``disk`` until it is full; the filler file."""
    filler = disk / "filler"
    block = b"\0" * 65536
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError:
            pass
        try:
            while True:  # the last few bytes
                f.write(b"\0")
        except OSError:
            pass
    return filler


def test_a_disk_that_fills_mid_book_loses_nothing_and_the_book_resumes(tmp_path, small_disk):
    model = write_model(tmp_path / "tiny-qwen35moe.gguf", "qwen35moe", context_length=32768)
    book = tmp_path / "book.txt"
    book.write_text(BOOK, encoding="utf-8")
    out = small_disk / "out"
    command = [sys.executable, "-m", "mangaka", "book", str(book), "--model", str(model), "--out", str(out)]
    command += ["--threads", "1", "--panels", "1", "--dialogue", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    running = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 600
    while 1 not in screenplay_files(out):
        assert running.poll() is None, running.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no chapter 1 after 10 minutes"
        time.sleep(0.01)
    filler = fill(small_disk)
    _, stderr = running.communicate(timeout=600)
    assert running.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, stderr[-3000:]
    assert "No space left on device; free some space or write somewhere else" in errors[0], errors
    first_life = screenplay_files(out)
    assert 2 not in first_life, "the book finished before the disk filled"
    chapter_1 = first_life[1].read_bytes()
    for path in first_life.values():  # whole: every screenplay on disk parses
        json.loads(path.read_text(encoding="utf-8"))
    bible = out / "bible.json"
    if bible.exists():
        json.loads(bible.read_text(encoding="utf-8"))
    assert [p.name for p in out.rglob("*") if p.name.endswith(".tmp")] == []

    filler.unlink()  # room again: the same command finishes the book
    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    written = screenplay_files(out)
    assert sorted(written) == [1, 2]
    assert written[1].read_bytes() == chapter_1  # resumed, not written again
    assert json.loads(bible.read_text(encoding="utf-8"))["characters"]
