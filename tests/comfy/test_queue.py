"""``python -m mangaka queue`` against real ComfyUI servers: the storyboard example workflow and
the tiny model, whole books, a server killed mid-book, and two servers sharing a book; the
motion comic example on the storyboard cards, one video per chapter (issue 54)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from mangaka.devtools.tiny_models import write_model
from tests.comfy.examples import twin_path
from tests.comfy.support import motion_comic_cards

ROOT = Path(__file__).resolve().parents[2]
MODEL = "tiny-qwen35moe.gguf"

BOOKS = {
    "zh": "渡口的灯笼\n\n第一章 黄昏\n\n最后一班渡船在黄昏时分离岸。林拉着弟弟的手跑过栈桥。\n\n"
    "第二章 灯笼\n\n水面上漂着一盏红灯笼。谭老伯说，那是去年中秋放的。\n\n"
    "第三章 回家\n\n夜里，林把灯笼挂在门口。弟弟终于笑了。\n",
    "en": "Chapter 1: Dusk\n\nThe last ferry left at dusk. Lin ran down the pier.\n\n"
    "Chapter 2: The Lantern\n\nA red lantern floated on the water. Old Tan said it was last year's.\n\n"
    "Chapter 3: Home\n\nAt night Lin hung the lantern by the door, and her brother smiled.\n",
}


def workflow(tmp: Path, panels: int = 2, dialogue: int = 2) -> Path:
    """The storyboard example's API twin with the tiny model and a small page."""
    prompt = json.loads(twin_path("storyboard").read_text(encoding="utf-8"))
    for node in prompt.values():
        inputs = node["inputs"]
        if node["class_type"] == "MangakaLoadLLM":
            inputs.update(model=MODEL, threads=1, gpu_layers=0)
        elif node["class_type"] == "MangakaScreenwriter":
            inputs.update(panels=panels, dialogue_lines=dialogue, max_characters=3, sampling="greedy")
        elif node["class_type"] == "MangakaComposePage":
            inputs.update(page="custom", width=1240, height=1754)
    path = tmp / f"storyboard-tiny-{panels}-{dialogue}.json"
    path.write_text(json.dumps(prompt), encoding="utf-8")
    return path


def with_model(server):
    write_model(server.base_dir / "models" / "LLM" / MODEL, "qwen35moe", context_length=32768)
    return server


@pytest.fixture(scope="module")
def one(comfy_factory):
    return with_model(comfy_factory())


def queue(*args: str, wait: bool = True):
    cmd = [sys.executable, "-m", "mangaka", "queue", *args]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)


def state(out: Path) -> dict:
    try:
        return json.loads((out / "queue-state.json").read_text(encoding="utf-8"))["chapters"]
    except (OSError, ValueError, KeyError):
        return {}


def successes(server) -> list[str]:
    """The prompts this server instance ran to success (its history lives in memory)."""
    history = server.get_json("/history")
    return [pid for pid, entry in history.items() if entry.get("status", {}).get("status_str") == "success"]


def wait_until(predicate, timeout: float = 300.0, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(step)
    raise AssertionError("timed out")


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_three_chapter_book_finishes_with_every_chapters_pages(one, language, tmp_path):
    book = tmp_path / f"book.{language}.txt"
    book.write_text(BOOKS[language], encoding="utf-8")
    out = tmp_path / "out"
    run = queue(str(book), "--workflow", str(workflow(tmp_path)), "--server", one.url, "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.startswith("3 of 3 chapters done"), run.stdout
    chapters = state(out)
    assert [c["status"] for c in chapters.values()] == ["done"] * 3
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    assert [p.name[:2] for p in folders] == ["01", "02", "03"]
    for folder in folders:
        pages = sorted(folder.glob("*.png"))
        assert pages, folder
        with Image.open(pages[0]) as page:
            assert page.size == (1240, 1754)
        assert json.loads((folder / "outputs.json").read_text(encoding="utf-8"))["prompt_id"]
    # a rerun finds everything done and submits nothing; asked to, it exports the finished book
    before = len(successes(one))
    again = queue(
        str(book), "--workflow", str(workflow(tmp_path)), "--server", one.url, "--out", str(out),
        "--export", "cbz,pdf",
    )  # fmt: skip
    assert again.returncode == 0 and len(successes(one)) == before, again.stderr[-3000:]
    _check_book_export(out, folders, book.stem, language)


def _check_book_export(out: Path, folders: list[Path], title: str, language: str) -> None:
    """One CBZ and one PDF per chapter (its saved pages, in order) and one of each for the book."""
    from comicapi.comicarchive import ComicArchive

    whole = ComicArchive(str(out / f"{title}.cbz")).read_cix()
    counts = [len(list(folder.glob("*.png"))) for folder in folders]
    assert (whole.title, whole.language, whole.manga, whole.page_count) == (
        title, language, "YesAndRightToLeft", sum(counts),
    )  # fmt: skip
    for folder, count in zip(folders, counts, strict=True):
        [chapter] = [p for p in out.glob(f"{folder.name[:2]} *.cbz")]
        archive = ComicArchive(str(chapter))
        assert archive.read_cix().page_count == count
        assert archive.get_page(0) == sorted(folder.glob("*.png"))[0].read_bytes()
        assert chapter.with_suffix(".pdf").read_bytes().startswith(b"%PDF-")


def test_a_book_becomes_one_video_per_chapter_and_a_rerun_resumes(one, tmp_path):
    """The motion comic example, its image half taken out (Motion Comic films the storyboard cards),
    queued for a two-chapter book: each chapter's folder gets Save Video's MP4, which PyAV decodes;
    a rerun skips both chapters, submitting and downloading nothing."""
    import av

    book = tmp_path / "book.txt"
    book.write_text(BOOKS["en"].split("\n\nChapter 3")[0] + "\n", encoding="utf-8")
    wf = tmp_path / "motion-comic-cards.json"
    wf.write_text(json.dumps(motion_comic_cards(panels=2, size="1080x1080", fps=12)), encoding="utf-8")
    out = tmp_path / "out"
    args = [str(book), "--workflow", str(wf), "--server", one.url, "--out", str(out)]
    run = queue(*args)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.startswith("2 of 2 chapters done"), run.stdout
    chapters = state(out)
    assert sorted(chapters) == ["1", "2"] and all(c["status"] == "done" for c in chapters.values()), chapters
    for chapter in chapters.values():
        [video] = [out / chapter["folder"] / n for n in chapter["files"] if n.endswith(".mp4")]
        with av.open(str(video)) as container:
            assert container.duration and container.duration > 0, video
            frame = next(container.decode(video=0))
            assert (frame.width, frame.height) == (1080, 1080), video
    folders = [out / c["folder"] for c in chapters.values()]
    files = {p: p.stat().st_mtime_ns for folder in folders for p in folder.rglob("*")}
    before = len(successes(one))
    again = queue(*args)
    assert again.returncode == 0 and again.stdout.startswith("2 of 2 chapters done"), again.stderr[-3000:]
    assert len(successes(one)) == before  # nothing submitted
    assert {p: p.stat().st_mtime_ns for folder in folders for p in folder.rglob("*")} == files
    assert state(out) == chapters


def test_a_killed_server_and_a_rerun_complete_the_book_each_chapter_once(comfy_factory, tmp_path):
    server = with_model(comfy_factory())
    book = tmp_path / "book.txt"
    book.write_text(BOOKS["en"], encoding="utf-8")
    out = tmp_path / "out"
    args = [
        str(book),
        "--workflow",
        str(workflow(tmp_path, panels=4)),
        "--server",
        server.url,
        "--out",
        str(out),
    ]
    running = queue(*args, wait=False)
    wait_until(lambda: state(out).get("2", {}).get("status") == "submitted")
    time.sleep(1.0)  # chapter 2 is now running on the server
    first_life = successes(server)
    server.kill()
    stdout, stderr = running.communicate(timeout=120)
    assert running.returncode == 1, stdout + stderr[-2000:]
    assert "stopped answering" in stdout and "rerun the same command" in stdout
    # chapter 1's characters are in the book's bible; a person edits one before the rerun
    bible_file = out / "bible.json"
    data = json.loads(bible_file.read_text(encoding="utf-8"))
    assert data["characters"] and {c["first_chapter"] for c in data["characters"]} == {1}
    edited = {**data["characters"][0], "appearance": "hand-edited look: grey coat, lantern", "edited": True}
    data["characters"][0] = edited
    bible_file.write_text(json.dumps(data), encoding="utf-8")
    server.start()
    rerun = queue(*args)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr[-3000:]
    second_life = successes(server)
    chapters = state(out)
    assert all(c["status"] == "done" for c in chapters.values())
    ran = first_life + second_life
    assert sorted(ran) == sorted(c["prompt_id"] for c in chapters.values())  # each chapter done once
    assert len(ran) == 3
    assert chapters["1"]["submissions"] == 1 and chapters["2"]["submissions"] == 2
    assert len(chapters["2"]["abandoned"]) == 1
    # the bible resumed with the book: every chapter's characters are in it, the edit is kept
    bible = json.loads(bible_file.read_text(encoding="utf-8"))
    entries = {c["id"]: c for c in bible["characters"]}
    assert entries[edited["id"]] == edited
    for number, chapter in chapters.items():
        [saved] = [n for n in chapter["files"] if n.endswith(".json")]  # Save Screenplay's file
        screenplay = json.loads((out / chapter["folder"] / saved).read_text(encoding="utf-8"))
        for c in screenplay["characters"]:
            assert c["id"] in entries, (number, c["id"])
            if c["id"] == edited["id"] and number != "1":  # chapter 1 was written before the edit
                assert c["appearance"] == edited["appearance"]
    # and the chapters written after the edit were given it: the bible each was posted with
    for pid in second_life:
        posted = server.get_json(f"/history/{pid}")[pid]["prompt"][2]
        [writer] = [n for n in posted.values() if n["class_type"] == "MangakaScreenwriter"]
        given = {c["id"]: c for c in json.loads(writer["inputs"]["bible"])["characters"]}
        assert given[edited["id"]] == edited
        assert writer["inputs"]["chapter_number"] in (2, 3)


def test_two_servers_share_a_book_and_one_stopping_mid_book_still_completes_it(comfy_factory, tmp_path):
    a, b = with_model(comfy_factory()), with_model(comfy_factory())
    book = tmp_path / "book.txt"
    book.write_text(BOOKS["zh"] + "\n第四章 清晨\n\n天亮了，渡船又回来了。\n", encoding="utf-8")
    out = tmp_path / "out"
    # Chapters long enough (8 panels, 12 lines: seconds each) that b is stopped in the middle of one.
    long_chapters = workflow(tmp_path, panels=8, dialogue=12)
    args = [str(book), "--workflow", str(long_chapters), "--server", a.url, "--server", b.url]
    running = queue(*args, "--out", str(out), wait=False)
    busy = lambda: {c.get("server") for c in state(out).values() if c.get("status") == "submitted"}  # noqa: E731
    wait_until(lambda: {a.url, b.url} <= busy())  # both servers have a chapter
    b.kill()  # at once and for good: stopped with SIGINT, ComfyUI could finish the prompt it ran
    stdout, stderr = running.communicate(timeout=600)
    assert running.returncode == 0, stdout + stderr[-3000:]
    chapters = state(out)
    assert all(c["status"] == "done" for c in chapters.values())
    assert len(chapters) == 4
    assert any(c["abandoned"] for c in chapters.values())  # b's chapter moved to a
    assert f"server {b.url} stopped answering" in stdout


def test_unreachable_server_and_ui_format_workflow_are_clear_errors(one, tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(BOOKS["en"], encoding="utf-8")
    run = queue(
        str(book),
        "--workflow",
        str(workflow(tmp_path)),
        "--server",
        "http://127.0.0.1:9",
        "--out",
        str(tmp_path / "o"),
    )
    assert run.returncode == 1 and "http://127.0.0.1:9 is unreachable" in run.stderr
    ui = ROOT / "example_workflows" / "storyboard.json"
    run = queue(str(book), "--workflow", str(ui), "--server", one.url, "--out", str(tmp_path / "o"))
    assert run.returncode == 1 and "UI-format" in run.stderr and "Export (API)" in run.stderr


def test_a_missing_model_is_refused_before_anything_is_submitted(one, tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(BOOKS["en"], encoding="utf-8")
    prompt = json.loads(workflow(tmp_path).read_text(encoding="utf-8"))
    for node in prompt.values():
        if node["class_type"] == "MangakaLoadLLM":
            node["inputs"]["model"] = "Qwen3.5-35B-A3B-Q4_K_M.gguf"
    wf = tmp_path / "missing.json"
    wf.write_text(json.dumps(prompt), encoding="utf-8")
    before = len(one.get_json("/history"))
    run = queue(str(book), "--workflow", str(wf), "--server", one.url, "--out", str(tmp_path / "o"))
    assert (
        run.returncode == 1
        and "Qwen3.5-35B-A3B-Q4_K_M.gguf" in run.stderr
        and "nothing was submitted" in run.stderr
    )
    assert len(one.get_json("/history")) == before


def test_a_failing_chapter_is_reported_and_the_rest_go_on(one, tmp_path):
    book = tmp_path / "book.txt"
    # chapter 2 is empty of text: the Screenwriter refuses it; chapters 1 and 3 go on
    book.write_text(
        "Chapter 1\n\nLin ran.\n\nChapter 2\n\n   \n\nChapter 3\n\nLin slept.\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    run = queue(
        str(book), "--workflow", str(workflow(tmp_path)), "--server", one.url, "--out", str(out),
        "--export", "cbz",
    )  # fmt: skip
    assert run.returncode == 1
    chapters = state(out)
    assert [chapters[n]["status"] for n in ("1", "2", "3")] == ["done", "failed", "done"]
    assert "chapter is empty" in chapters["2"]["error"]
    assert "failed" in run.stdout
    # the finished chapters are exported; the book says which one it lacks
    assert sorted(p.name for p in out.glob("*.cbz")) == ["01 Chapter 1.cbz", "03 Chapter 3.cbz", "book.cbz"]
    assert "exported without chapter 2 (Chapter 2): failed" in run.stderr


def test_an_unusable_bible_is_refused_before_anything_is_submitted(one, tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(BOOKS["en"], encoding="utf-8")
    bible = tmp_path / "cast.json"
    bible.write_text('{"version": 1, "characters": [{"id": "lin", "name": "Lin"}, {"id": "lin"}]}')
    before = len(one.get_json("/history"))
    run = queue(
        str(book), "--workflow", str(workflow(tmp_path)), "--server", one.url, "--out", str(tmp_path / "o"),
        "--bible", str(bible),
    )  # fmt: skip
    assert run.returncode == 1, run.stderr[-2000:]
    assert f"the book's bible {bible} cannot be used; nothing was submitted" in run.stderr
    assert "'lin' is listed twice" in run.stderr or "already characters[0]'s id" in run.stderr, run.stderr
    assert len(one.get_json("/history")) == before


def test_a_saved_series_bible_is_what_the_book_learns(one, tmp_path):
    """With Save Series Bible in the workflow, the book's bible merges each chapter's saved bible:
    it holds every character of every chapter, first seen where the Screenwriter met them."""
    book = tmp_path / "book.txt"
    book.write_text(BOOKS["zh"], encoding="utf-8")
    prompt = json.loads(workflow(tmp_path).read_text(encoding="utf-8"))
    writer = next(k for k, v in prompt.items() if v["class_type"] == "MangakaScreenwriter")
    prompt["950"] = {
        "class_type": "MangakaSaveSeriesBible",
        "inputs": {"bible": [writer, 4], "filename_prefix": "mangaka/bible"},
    }
    wf = tmp_path / "with-bible.json"
    wf.write_text(json.dumps(prompt), encoding="utf-8")
    out = tmp_path / "out"
    run = queue(str(book), "--workflow", str(wf), "--server", one.url, "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    bible = {c["id"]: c for c in json.loads((out / "bible.json").read_text(encoding="utf-8"))["characters"]}
    first_seen: dict[str, int] = {}
    for number, chapter in sorted(state(out).items(), key=lambda kv: int(kv[0])):
        files = chapter["files"]
        assert any(n.startswith("bible_") for n in files) and any(n.startswith("screenplay_") for n in files)
        [saved] = [n for n in files if n.startswith("screenplay_")]
        screenplay = json.loads((out / chapter["folder"] / saved).read_text(encoding="utf-8"))
        for c in screenplay["characters"]:
            assert c["id"] in bible, (number, c["id"])
            first_seen.setdefault(c["id"], int(number))
    assert all(bible[i]["first_chapter"] == n for i, n in first_seen.items()), (first_seen, bible)
