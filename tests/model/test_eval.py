"""``python -m mangaka eval`` on the embedded model (SmolLM2-135M from PyPI) over two gold chapters:
the JSON document's shape, the tables, and a ``--compare`` run that resumes the first
configuration's runs from disk. A toy model's scores are printed by the command, not asserted.

The compare runs on the English chapter alone: the Japanese one is 2,007 of SmolLM2's tokens (its
vocabulary spells kana byte by byte) against en3's 563, and writing it a second time showed
nothing the first configuration's run and the one-chapter compare do not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mangaka.demo import demo_model_path
from mangaka.evaluate.runner import FIGURES

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ["en3", "ja3"]
COMPARED = ["en3"]


def mangaka(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "mangaka", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_eval_scores_two_chapters_then_compares_a_second_configuration(tmp_path):
    out = tmp_path / "results"

    def base(chapters: list[str]) -> list[str]:
        return [
            "eval", "gold", "--model", str(demo_model_path()), "--chapters", ",".join(chapters),
            "--seeds", "1", "--panels", "2", "--dialogue", "2", "--out", str(out),
        ]  # fmt: skip

    run = mangaka(*base(CHAPTERS), "--json")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    report = json.loads(run.stdout)
    assert report["chapters"] == CHAPTERS and report["seeds"] == [0] and report["figures"] == list(FIGURES)
    [config] = report["configs"].values()
    assert config["settings"]["model"] == str(demo_model_path())
    assert [(r["chapter"], r["seed"]) for r in config["runs"]] == [(c, 0) for c in CHAPTERS]
    for chapter in CHAPTERS:
        figures = config["chapters"][chapter]
        assert set(figures) == set(FIGURES)
        for name, value in figures.items():
            mean = value["mean"]
            if name in ("tokens", "seconds"):  # a run generates and takes time
                assert mean is not None and mean > 0, (chapter, name, value)
            elif name in ("tries", "repairs"):  # one seed: whole numbers, one try at least
                assert mean is not None and mean == int(mean) >= (name == "tries"), (chapter, name, value)
            else:
                assert mean is None or 0.0 <= mean <= 1.0, (chapter, name, value)
        assert (out / "a" / f"{chapter}.seed0.json").is_file()  # kept as it finished
    assert "compare" not in report

    # b changes two keys; jump_forward=canonical against the default (exact). Their screenplays are
    # not compared: canonical takes the forced tokens as llguidance tokenizes them, so the two draw
    # other samples. (It was jump_forward=off: one token at a time made b the most of this test's
    # minutes; any value other than a's shows the same table, and test_jump_forward.py runs off.)
    again = mangaka(*base(COMPARED), "--compare", "prompt_language=zh", "jump_forward=canonical")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count(" resumed: ") == len(COMPARED), again.stderr[-3000:]  # a's run, from disk
    assert "configuration a:" in again.stdout and "configuration b:" in again.stdout
    assert "prompt_language=zh" in again.stdout and "a vs b" in again.stdout
    assert "jump_forward=exact" in again.stdout and "jump_forward=canonical" in again.stdout
    assert (out / "b" / "en3.seed0.json").is_file() and not (out / "b" / "ja3.seed0.json").exists()
