"""Hostile input at the command line (issue 19, items 5 and 9, and the last-resort handler): every
``OSError`` a command meets is one line naming the path and the cause, exit code 1; nothing is
half-written; an unexpected exception is reported as a bug with how to report it.

No model loads here: a refused command stops before its model is read (the model path does not
exist, so a check that came too late would say so instead of the message asked for).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from mangaka.cli.main import main, os_error_line, run_command
from mangaka.fileio import write_atomic

ROOT = Path(__file__).resolve().parents[2]
SCREENPLAY = ROOT / "tests" / "unit" / "data" / "golden_screenplay.json"
BOOK = ROOT / "prompts" / "samples" / "demo_book.en.txt"
CHAPTER = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"
PANELS = len(json.loads(SCREENPLAY.read_text(encoding="utf-8"))["panels"])
SMALL = ["--page", "custom", "--width", "256", "--height", "362"]  # quick pages


def one_error(argv: list[str], caplog: pytest.LogCaptureFixture, code: int = 1) -> str:
    """Run ``main(argv)`` in-process: its exit code is ``code`` and it logged exactly one error."""
    caplog.clear()
    with caplog.at_level("INFO", logger="mangaka"):
        assert main(argv) == code
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "\n" not in errors[0], caplog.text
    assert "Traceback" not in caplog.text
    return errors[0]


def temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp") or ".mangaka-probe-" in p.name]


# ------------------------------------------------------------------------------ page: the inputs


def test_page_images_that_are_a_file_or_missing_are_named(tmp_path, caplog):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    out = tmp_path / "pages"
    message = one_error(["page", str(SCREENPLAY), "--images", str(a_file), "-o", str(out)], caplog)
    assert f"--images {a_file} is a file" in message and "give the folder" in message
    missing = tmp_path / "missing"
    message = one_error(["page", str(SCREENPLAY), "--images", str(missing), "-o", str(out)], caplog)
    assert f"--images {missing} does not exist" in message
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no images" in one_error(
        ["page", str(SCREENPLAY), "--images", str(empty), "-o", str(out)], caplog
    )
    assert not out.exists()


@pytest.mark.parametrize("damage", ["not an image", "truncated"])
def test_a_corrupt_image_among_the_panels_is_named(tmp_path, caplog, damage):
    images = tmp_path / "images"
    images.mkdir()
    for i in range(PANELS):
        Image.new("RGB", (64, 64), (i * 40, 80, 120)).save(images / f"{i:02d}.png")
    bad = images / "01.png"
    data = bad.read_bytes()
    bad.write_bytes(b"this is no PNG" if damage == "not an image" else data[: len(data) // 2])
    out = tmp_path / "pages"
    message = one_error(["page", str(SCREENPLAY), "--images", str(images), "-o", str(out), *SMALL], caplog)
    assert f"{bad} is not an image Pillow can read" in message and "replace it" in message
    assert not out.exists()


def test_page_output_that_is_a_file_is_refused(tmp_path, caplog):
    a_file = tmp_path / "pages"
    a_file.write_text("mine", encoding="utf-8")
    message = one_error(["page", str(SCREENPLAY), "-o", str(a_file)], caplog)
    assert f"-o {a_file} is a file, not a folder; give a folder for the pages" in message
    assert a_file.read_text(encoding="utf-8") == "mine"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_outputs_root_cannot_write_are_refused_before_any_work(tmp_path, caplog):
    """As root every permission bit says yes; /proc says no to anyone (this is how root tests it)."""
    unwritable = Path("/proc") / "mangaka-test-out"
    message = one_error(["page", str(SCREENPLAY), "-o", str(unwritable)], caplog)
    assert f"-o {unwritable}: cannot write in the folder /proc" in message
    model = tmp_path / "never-read.gguf"
    line = ["book", str(BOOK), "--model", str(model), "--out", str(unwritable)]
    assert "cannot write in the folder /proc" in one_error(line, caplog)  # before the model is read
    line = ["book", str(BOOK), "--model", str(model), "--out", str(tmp_path / "s"), "--bible", "/proc/b.json"]
    assert "--bible /proc/b.json: cannot write in the folder /proc" in one_error(line, caplog)
    line = ["write", str(CHAPTER), "--model", str(model), "-o", str(unwritable / "x.json")]
    assert "cannot write" in one_error(line, caplog) or "does not exist" in caplog.text


def test_page_custom_size_from_the_command_line(tmp_path, caplog, capsys):
    out = tmp_path / "pages"
    assert (
        main(
            ["page", str(SCREENPLAY), "-o", str(out), "--page", "custom", "--width", "300", "--height", "420"]
        )
        == 0
    )
    pages = [Path(p) for p in capsys.readouterr().out.split()]
    assert pages and all(p.parent == out for p in pages)
    with Image.open(pages[0]) as page:
        assert page.size == (300, 420)
    for extra, needle in [
        (["--page", "custom"], "--page custom needs --width PX and --height PX"),
        (
            ["--page", "custom", "--width", "100", "--height", "400"],
            "--width must be from 256 to 20000, got 100",
        ),
        (["--page", "custom", "--width", "300", "--height", "-1"], "--height must be from 0 to 20000"),
        (["--page", "custom", "--width", "300", "--height", "0"], "only direction 'vertical'"),
        (["--width", "300"], "add --page custom"),
    ]:
        assert needle in one_error(["page", str(SCREENPLAY), "-o", str(tmp_path / "x"), *extra], caplog)
    strip = ["--page", "custom", "--width", "300", "--height", "0", "--direction", "vertical"]
    assert main(["page", str(SCREENPLAY), "-o", str(tmp_path / "strip"), *strip]) == 0


# ---------------------------------------------------------------------------- page: stale pages


def test_a_shorter_run_removes_its_earlier_pages_and_nothing_else(tmp_path, capsys):
    out = tmp_path / "pages"
    assert main(["page", str(SCREENPLAY), "-o", str(out), "--panels-per-page", "1", *SMALL]) == 0
    assert len(capsys.readouterr().out.split()) == PANELS > 1
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "page_099.png").write_bytes(b"mine too")  # a page name the earlier run never wrote
    assert main(["page", str(SCREENPLAY), "-o", str(out), "--panels-per-page", "8", *SMALL]) == 0
    assert capsys.readouterr().out.split() == [str(out / "page_001.png")]
    layout = json.loads((out / "layout.json").read_text(encoding="utf-8"))
    assert layout["files"] == ["page_001.png"] and len(layout["pages"]) == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "layout.json",
        "notes.txt",
        "page_001.png",
        "page_099.png",
    ]

    assert main(["page", str(SCREENPLAY), "-o", str(out), "--format", "jpeg", *SMALL]) == 0  # png → jpg
    assert sorted(p.name for p in out.iterdir()) == [
        "layout.json",
        "notes.txt",
        "page_001.jpg",
        "page_099.png",
    ]


def test_a_layout_from_before_the_file_list_still_owns_its_pages(tmp_path):
    out = tmp_path / "pages"
    assert main(["page", str(SCREENPLAY), "-o", str(out), "--panels-per-page", "1", *SMALL]) == 0
    layout = json.loads((out / "layout.json").read_text(encoding="utf-8"))
    del layout["files"]  # as an older Mangaka wrote it: the pages, no file names
    (out / "layout.json").write_text(json.dumps(layout), encoding="utf-8")
    assert main(["page", str(SCREENPLAY), "-o", str(out), "--panels-per-page", "8", *SMALL]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["layout.json", "page_001.png"]


# ------------------------------------------------------------------------- OSError → one line


def test_write_atomic_names_the_file_not_its_temporary(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(NotADirectoryError) as exc:
        write_atomic(blocker / "out.json", "{}")
    assert exc.value.filename == str(blocker / "out.json")
    write_atomic(tmp_path / "once.json", "1")
    with pytest.raises(FileExistsError) as exists:
        write_atomic(tmp_path / "once.json", "2", overwrite=False)
    assert exists.value.filename == str(tmp_path / "once.json")
    assert (tmp_path / "once.json").read_text() == "1" and not temp_files(tmp_path)


def test_an_os_error_is_one_line_with_the_path_cause_and_fix(caplog):
    def command(_args: argparse.Namespace) -> int:
        raise FileNotFoundError(2, "No such file or directory", "/in/a\nname.png")

    with caplog.at_level("INFO", logger="mangaka"):
        assert run_command(command, argparse.Namespace()) == 1
    assert caplog.records[-1].getMessage() == "/in/a\\nname.png: No such file or directory; check the path"

    line = os_error_line(OSError(28, "No space left on device", "/data/pages/page_001.png"))
    assert (
        line == "/data/pages/page_001.png: No space left on device; free some space or write somewhere else"
    )
    assert "ulimit -f" in os_error_line(OSError(27, "File too large", "/x"))
    assert os_error_line(BrokenPipeError(32, "Broken pipe")) == "Broken pipe"


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # as a shell leaves it: main() must ignore it itself


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="needs setrlimit")
def test_a_file_size_limit_is_one_line_and_leaves_no_part_of_a_page(tmp_path):
    """``ulimit -f``: the first page is bigger than the limit; the write fails with EFBIG (the
    signal that would kill the process is ignored by main()), and no half page stays behind."""
    out = tmp_path / "pages"
    run = subprocess.run(
        [sys.executable, "-m", "mangaka", "page", str(SCREENPLAY), "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert run.returncode == 1, run.stderr[-2000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR")]
    too_large = "File too large; the file is larger than this shell lets a program write (ulimit -f)"
    assert errors == [f"ERROR mangaka: {out / 'page_001.png'}: {too_large}; raise the limit"], run.stderr
    assert "Traceback" not in run.stderr
    assert list(out.iterdir()) == []  # no page, no layout, no temporary file


# ---------------------------------------------------------------------------- the last resort


def test_an_unexpected_exception_is_reported_as_a_bug_with_its_traceback_saved(caplog):
    def broken(_args: argparse.Namespace) -> int:
        return {}["missing"]  # a real bug, as a command could have one

    with caplog.at_level("INFO", logger="mangaka"):
        assert run_command(broken, argparse.Namespace(), ["page", "x.json"]) == 1
    (message,) = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert message.startswith(
        "internal error, a bug in Mangaka: KeyError: 'missing'. Please report it at https://"
    )
    saved = Path(message.rsplit("the traceback is in ", 1)[1])
    try:
        text = saved.read_text(encoding="utf-8")
        assert text.startswith("python -m mangaka page x.json\n") and 'return {}["missing"]' in text
    finally:
        saved.unlink()


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (KeyboardInterrupt(), 130, "interrupted"),
        (PermissionError(13, "Permission denied", "/srv/out.json"), 1, "/srv/out.json: Permission denied"),
    ],
)
def test_run_command_turns_each_kind_of_error_into_one_line(exc, code, line, caplog):
    def command(_args: argparse.Namespace) -> int:
        raise exc

    with caplog.at_level("INFO", logger="mangaka"):
        assert run_command(command, argparse.Namespace()) == code
    (message,) = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert message.startswith(line)
