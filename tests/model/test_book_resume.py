"""``python -m mangaka book`` killed mid-book and run again: the bible resumes with the book.

The command runs as a subprocess on the tiny random-weight model with its default options (the
model, the book and the output folder given; one thread, as every test here), is killed with
SIGKILL once the bible and chapter 1's screenplay are on disk, a person edits a bible entry, and
the same command finishes the book."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mangaka.devtools.tiny_models import write_model
from tests.model.support import BOOK, screenplay_files

ROOT = Path(__file__).resolve().parents[2]
LOOK = "hand-edited look: tall, grey braid, blue shawl"


def test_a_killed_book_resumes_with_its_bible_and_a_hand_edit(tmp_path):
    model = write_model(tmp_path / "tiny-qwen35moe.gguf", "qwen35moe", context_length=32768)
    book = tmp_path / "book.txt"
    book.write_text(BOOK, encoding="utf-8")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "mangaka", "book", str(book), "--model", str(model), "--out", str(out)]
    command += ["--threads", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    running = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    bible_file = out / "bible.json"
    deadline = time.monotonic() + 600
    while not (bible_file.exists() and 1 in screenplay_files(out)):
        assert running.poll() is None, running.communicate()[1].decode()[-3000:]
        assert time.monotonic() < deadline, "no bible and chapter 1 after 10 minutes"
        time.sleep(0.01)
    running.send_signal(signal.SIGKILL)
    running.communicate(timeout=60)
    assert running.returncode == -signal.SIGKILL
    first_life = screenplay_files(out)
    assert 3 not in first_life, "the book finished before it was killed"
    chapter_1 = first_life[1].read_bytes()

    data = json.loads(bible_file.read_text(encoding="utf-8"))
    assert data["characters"], data
    i = max(range(len(data["characters"])), key=lambda i: data["characters"][i]["first_chapter"])
    edited = {**data["characters"][i], "appearance": LOOK, "edited": True}
    data["characters"][i] = edited
    bible_file.write_text(json.dumps(data), encoding="utf-8")

    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    written = screenplay_files(out)
    assert sorted(written) == [1, 2, 3]
    assert written[1].read_bytes() == chapter_1  # not written again
    check_bible(out, edited, after=set(first_life))


def check_bible(out: Path, edited: dict, after: set[int]) -> int:
    """Every screenplay's ids are bible ids, the edited entry is as the person left it, and the
    chapters written after the edit (not in ``after``) show it in its edited look; how many do
    (the random model's names are random: whether a later chapter meets the person is chance)."""
    bible = {c["id"]: c for c in json.loads((out / "bible.json").read_text(encoding="utf-8"))["characters"]}
    assert bible[edited["id"]] == edited  # the person's edit is kept
    shown = 0
    for number, path in screenplay_files(out).items():
        for c in json.loads(path.read_text(encoding="utf-8"))["characters"]:
            assert c["id"] in bible, (number, c["id"])
            if bible[c["id"]]["edited"] and number not in after:
                assert c["appearance"] == bible[c["id"]]["appearance"] == LOOK, (number, c)
                shown += 1
    return shown
