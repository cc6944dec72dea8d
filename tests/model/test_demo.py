"""The README's first command, as a new user runs it: on a fresh ``.venv``, with no extra flags.

A small model's output depends on the thread count (float sums in another order) and the seed, so
besides the command as written, the demo runs at ten seeds spread over three thread counts (two on
two cores); the code (repairs, not lucky settings) is what makes every cell pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest
from PIL import Image

from mangaka.evaluate import dialogue_kept
from mangaka.names import name_match
from mangaka.page.lettered import lettered
from mangaka.screenplay import Screenplay, validate_screenplay
from mangaka.source import find_quotes

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "screenplay.schema.json").read_text(encoding="utf-8"))


def readme_demo_command() -> str:
    """The command under "Run the demo" in the README, exactly as written there."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("Run the demo", 1)[1]
    command = re.search(r"```bash\n(.+?)\n```", section, re.S)
    assert command, "the README's 'Run the demo' section has no bash block"
    return command.group(1).strip()


def assert_demo_outputs(stdout: str, stderr: str, cwd: Path) -> dict:
    """The demo printed the screenplay's path, then the storyboard page's; both are what they say,
    and the storyboard's report names no card cut short or covered by its balloons."""
    paths = [cwd / line for line in stdout.split("\n") if line.strip()]
    assert len(paths) == 2, stdout
    screenplay, storyboard = paths
    assert screenplay.name.endswith(".json") and storyboard.suffix == ".png"
    data = json.loads(screenplay.read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    assert validate_screenplay(data) == []
    assert_demo_keeps_its_chapter(data)
    lost = [
        line for line in stderr.splitlines()
        if "storyboard:" in line and ("cut with" in line or "placed over the card" in line)
    ]  # fmt: skip
    assert not lost, lost
    with Image.open(storyboard) as page:
        assert page.width > 500 and page.height > 500
        assert sum(1 for n in page.convert("L").histogram() if n) > 8  # drawn, not blank
    return data


def assert_demo_keeps_its_chapter(data: dict) -> None:
    """The demo's screenplay keeps its chapter: at least 5 of its 6 quoted lines, verbatim and in
    order; a cast of Mei and the old man (by name or alias) and nobody the chapter does not name;
    each of them shown in a panel the storyboard draws."""
    chapter = (ROOT / "prompts" / "samples" / "demo_chapter.en.txt").read_text(encoding="utf-8")
    quotes = find_quotes(chapter, "en")
    assert len(quotes) == 6
    screenplay = Screenplay.model_validate(data)
    kept = dialogue_kept(chapter, screenplay)
    assert kept.kept >= 5 and kept.in_order, kept.message
    flat = [" ".join(q.split()) for q in quotes]
    for line in screenplay.dialogue:
        if line.quote is not None:
            assert line.line == flat[line.quote - 1]
    names = [c.name for c in screenplay.characters]
    people = (["Mei"], ["the old man", "old man", "An old man"])
    for who in people:
        assert any(name_match(n, who, "en") for n in names), (who, names)
    assert all(name_match(n, ["Mei", "the old man"], "en") for n in names), names
    shown = {cid for p in screenplay.panels for cid in p.characters}
    assert shown <= {c.id for c in screenplay.characters}
    for who in people:
        ids = {c.id for c in screenplay.characters if name_match(c.name, who, "en")}
        assert ids & shown, f"no panel the storyboard draws shows {who[0]}: {screenplay.panels}"
    assert_demo_reads_its_chapter(screenplay)


# Who says each of the demo chapter's six quoted lines, as the chapter says it.
DEMO_SPEAKERS = ("the old man", "Mei", "the old man", "Mei", "the old man", "the old man")


def assert_demo_reads_its_chapter(screenplay: Screenplay) -> None:
    """The title is the chapter's heading; at least 5 of the 6 lines are spoken by the one the
    chapter says (the old man says "What do you want, girl?"); no balloon ends with a comma."""
    assert screenplay.title == "Chapter 1: The Lantern Shop", screenplay.title
    names = {c.id: c.name for c in screenplay.characters}
    said = {line.quote: names.get(line.speaker, line.speaker) for line in screenplay.dialogue if line.quote}
    right = [n for n, who in enumerate(DEMO_SPEAKERS, 1) if name_match(said.get(n, ""), [who], "en")]
    assert len(right) >= 5 and 3 in right, (said, right)
    lettered_lines = [lettered(line.line, "en") for line in screenplay.dialogue]
    assert not [t for t in lettered_lines if t.rstrip().endswith(",")], lettered_lines


def _copy_checkout(dest: Path) -> None:
    """The files a fresh clone has (tracked, and new files not ignored), without .venv or caches."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def test_the_readme_demo_command_on_a_fresh_venv(tmp_path):
    """``bash native/setup.sh && .venv/bin/python -m mangaka demo`` in a fresh copy of the checkout:
    a new .venv, the cached llama-cpp-python wheel, the rest from wheels that tests/run.sh
    downloaded (pip's index off, so the test downloads nothing), default threads and seed."""
    wheelhouse = os.environ.get("MANGAKA_WHEELHOUSE")
    if not wheelhouse:
        pytest.skip("MANGAKA_WHEELHOUSE is not set: run the tests with `bash tests/run.sh`")
    assert (Path(wheelhouse) / ".complete").is_file(), f"{wheelhouse} is incomplete; rerun tests/run.sh"
    pack = tmp_path / "pack"
    _copy_checkout(pack)
    assert not (pack / ".venv").exists()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))},
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": wheelhouse,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    command = readme_demo_command()
    assert command == "bash native/setup.sh && .venv/bin/python -m mangaka demo"
    run = subprocess.run(
        ["bash", "-c", command], cwd=pack, env=env, capture_output=True, text=True, timeout=1200
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert (pack / ".venv" / "bin" / "python").is_file()
    assert "toy model" in run.stderr and "Qwen3.5-35B-A3B" in run.stderr
    assert_demo_outputs("\n".join(run.stdout.split("\n")[-3:]), run.stderr, pack)  # setup's lines come first


def _threads() -> list[int]:
    return sorted({1, 2, os.cpu_count() or 1})  # 1, 2 and the machine's default (every core)


PER_CELL = 3  # seeds at each thread count, at least


def _at_once(threads: int) -> int:
    """How many demos run side by side at ``threads``: as many as the cores hold."""
    return max(1, (os.cpu_count() or 1) // threads)


def _seeds(threads: int) -> list[int]:
    """The seeds run at ``threads``: each thread count gets its own seeds, at least ``PER_CELL``,
    rounded up to fill the rounds of demos run side by side (on two cores: 0–3 at one thread, two
    at a time, and 4–6 at two; where one round holds three or more, three).

    Why not every seed at every thread count: a cell's output is one sample of the toy model's
    mistakes, set by its (seed, threads) pair, and the model's output differs at each thread
    count and seed (README); seed 3 at one thread is not a repeat of seed 3 at two threads, nor
    of seed 4 at one. What the matrix is for is all here: every thread count (each its own
    order of float sums) with at least three seeds, and a different seed in every run (seven on
    two cores), so passing takes the repairs rather than a lucky setting; the README test above
    adds seed 0 at the default thread count. (It was ten demos on two cores, 280 s of CI: the
    extra seeds ran in rounds of their own and showed nothing three did not.)"""
    first = 0
    for t in _threads():
        at_once = _at_once(t)
        count = PER_CELL if at_once >= PER_CELL else -(-PER_CELL // at_once) * at_once
        if t == threads:
            return list(range(first, first + count))
        first += count
    raise ValueError(f"{threads} is not one of the thread counts {_threads()}")


def _demo(seed: int, threads: int, folder: Path) -> tuple[int, subprocess.CompletedProcess]:
    out = folder / f"seed{seed}" / "demo.screenplay.json"
    out.parent.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "mangaka", "demo", "--seed", str(seed), "--threads", str(threads),
         "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return seed, run


@pytest.mark.parametrize("threads", _threads())
def test_the_demo_over_seeds_and_thread_counts(threads, tmp_path):
    """Seeds dealt out over the thread counts (``_seeds``): every run writes a valid screenplay
    and its storyboard page. As many demos run at once as the cores hold at that thread count (two
    at one thread on two cores): each is its own process, so its output depends on its own threads
    only."""
    seeds = _seeds(threads)
    assert len(seeds) >= PER_CELL, seeds
    failed = []
    with ThreadPoolExecutor(max_workers=_at_once(threads)) as pool:
        runs = sorted(pool.map(lambda seed: _demo(seed, threads, tmp_path), seeds), key=lambda r: r[0])
    for seed, run in runs:
        if run.returncode != 0:
            failed.append(f"seed {seed}: {run.stderr.strip().splitlines()[-1:]}")
            continue
        assert_demo_outputs(run.stdout, run.stderr, ROOT)
    assert not failed, f"demo failed at {threads} threads: " + "; ".join(failed)


def test_demo_video_films_the_storyboard_beside_the_screenplay(tmp_path):
    """``demo --video``: the screenplay, its storyboard page, then ``demo.mp4`` of the storyboard
    cards with its subtitles, voice script and timeline; the video's length is the timeline's. A
    video path that cannot be written is refused before the model loads."""
    import av

    out = tmp_path / "demo.screenplay.json"
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "demo.mp4").mkdir()
    refused = subprocess.run(
        [sys.executable, "-m", "mangaka", "demo", "--video", "-o", str(tmp_path / "blocked" / "demo.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 1 and "is a folder" in refused.stderr and "toy model" not in refused.stderr
    run = subprocess.run(
        [sys.executable, "-m", "mangaka", "demo", "--video", "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    written = run.stdout.split()
    for name in ("demo.mp4", "demo.srt", "demo.ass", "demo.voice.csv", "demo.timeline.json"):
        assert str(tmp_path / name) in written, name
    timeline = json.loads((tmp_path / "demo.timeline.json").read_text(encoding="utf-8"))
    with av.open(str(tmp_path / "demo.mp4")) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == (1080, 1920)
        frames = sum(1 for _ in container.decode(video=0))
    assert abs(frames / 24 - timeline["duration"]) <= 1 / 24
    screenplay = json.loads(out.read_text(encoding="utf-8"))
    assert timeline["shots"][0]["panel"] == screenplay["panels"][0]["id"]
