"""Paths that are not regular files (issue 29, part 2): a FIFO, a device node, a socket, a folder or
a file name too long, as an input or an output, anywhere the pack reads or writes.

- An input is read only when it is a regular file of bounded size: a FIFO (which would wait for a
  writer forever) or a device such as ``/dev/zero`` (which never ends) is refused by name, at once.
- An output that is a character device (``/dev/null``) or a FIFO someone reads is written through,
  as ``> path`` in a shell; anything else that is not a regular file is refused, never replaced.

Device nodes are made with ``mknod`` in a temporary folder (the null and zero devices' numbers),
never a real ``/dev`` entry; where this user may not make them (not root), those cases skip.
No model loads: refused commands stop before their model is read (the model path does not exist).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from mangaka.cli.main import main
from mangaka.errors import InputError
from mangaka.fileio import NAME_MAX, read_input, read_text, write_atomic

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"
SCREENPLAY = ROOT / "tests" / "unit" / "data" / "golden_screenplay.json"


def device(folder: Path, name: str, kind: int = stat.S_IFCHR, minor: int = 3) -> Path:
    """A device node in ``folder``: by default the null device's numbers (1, 3); minor 5 is zero."""
    path = folder / name
    try:
        os.mknod(path, kind | 0o666, os.makedev(7 if kind == stat.S_IFBLK else 1, minor))
    except PermissionError:
        pytest.skip("this user may not make device nodes (mknod needs root)")
    return path


def fifo(folder: Path, name: str = "pipe") -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


def unix_socket(folder: Path, name: str = "sock") -> tuple[Path, socket.socket]:
    path = folder / name
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    return path, server


def one_error(argv: list[str], caplog: pytest.LogCaptureFixture) -> str:
    caplog.clear()
    with caplog.at_level("INFO", logger="mangaka"):
        assert main(argv) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "Traceback" not in caplog.text, caplog.text
    return errors[0]


def command_line(command: list[str], path: Path, tmp_path: Path) -> list[str]:
    """``command`` with its placeholders filled: ``{path}`` the input under test, the others
    files and folders in ``tmp_path`` (the model path does not exist: nothing may load it)."""
    values = {
        "path": str(path), "missing": str(tmp_path / "missing.gguf"), "out": str(tmp_path / "out.json"),
        "outdir": str(tmp_path / "panels"), "chapter": str(CHAPTER), "pages": str(tmp_path / "pages"),
        "workflow": str(ROOT / "example_workflows" / "api" / "manga_page.json"),
    }  # fmt: skip
    return [part.format(**values) for part in command]


def within(seconds: float, func, *args, **kwargs):
    """``func(*args)`` run in a thread: it must return (or raise) within ``seconds`` — a read of a
    FIFO or of /dev/zero would otherwise hang the test run, so a hang fails instead."""
    result: dict = {}

    def run() -> None:
        try:
            result["value"] = func(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{func.__name__} did not return within {seconds} s: it blocked"
    if "error" in result:
        raise result["error"]
    return result.get("value")


# ------------------------------------------------------------------------------------ inputs


@pytest.mark.parametrize("kind", ["fifo", "zero device", "null device", "socket", "folder"])
def test_an_input_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    if kind == "fifo":
        path = fifo(tmp_path)
    elif kind == "socket":
        path, server = unix_socket(tmp_path)
    elif kind == "folder":
        path = tmp_path / "chapter.txt"
        path.mkdir()
    else:
        path = device(tmp_path, "chapter.txt", minor=5 if kind == "zero device" else 3)
    for reader in (read_input, read_text):
        with pytest.raises(InputError) as info:
            within(10, reader, path, "chapter file")
        message = str(info.value)
        assert f"chapter file {path}" in message
        assert ("not a regular file" in message and "save its content to a file" in message) or (
            kind == "folder" and "is a folder; give the path of a file" in message
        ), message
    if kind == "socket":
        server.close()


def test_an_input_over_the_limit_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "book.txt"
    with open(big, "wb") as f:
        f.truncate(3 * 1024 * 1024)  # sparse: its size says 3 MiB
    with pytest.raises(InputError, match=r"book file .*book.txt is 3 MiB, more than the 2 MiB .* split it"):
        read_input(big, "book file", limit=2 * 1024 * 1024)
    assert len(read_input(big, "book file", limit=4 * 1024 * 1024)) == 3 * 1024 * 1024


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["write", "{path}", "--model", "{missing}", "-o", "{out}"], "chapter file"),
        (["book", "{path}", "--model", "{missing}", "--out", "{outdir}"], "book file"),
        (["page", "{path}", "--images", "{outdir}", "-o", "{pages}"], "screenplay file"),
        (
            ["book", "{chapter}", "--model", "{missing}", "--bible", "{path}", "--out", "{pages}"],
            "bible file",
        ),
    ],
    ids=["write chapter", "book", "page screenplay", "bible"],
)
@pytest.mark.parametrize("kind", ["fifo", "zero device"])
def test_the_commands_refuse_a_fifo_or_device_input_by_name_before_any_work(
    tmp_path, caplog, command, what, kind
):
    path = fifo(tmp_path, "input") if kind == "fifo" else device(tmp_path, "input", minor=5)
    (tmp_path / "panels").mkdir()
    message = within(30, one_error, command_line(command, path, tmp_path), caplog)
    assert f"{what} {path}" in message and "not a regular file" in message, message
    assert not (tmp_path / "out.json").exists()


# ------------------------------------------------------------------------------------ outputs


def test_a_character_device_output_is_written_through_and_stays_a_device(tmp_path):
    null = device(tmp_path, "null")
    write_atomic(null, "a screenplay")
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary file left
    with pytest.raises(FileExistsError):
        write_atomic(null, "x", overwrite=False)


def test_a_fifo_output_with_a_reader_gets_the_data_and_stays_a_fifo(tmp_path):
    pipe = fifo(tmp_path)
    got: list[bytes] = []

    def read() -> None:
        with open(pipe, "rb") as f:  # blocks until the writer opens
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 10
    while True:  # the reader may not have opened yet: the write is refused until it has
        try:
            write_atomic(pipe, "{}\n" * 20000)  # more than a pipe's buffer
            break
        except OSError as exc:
            assert exc.errno == errno.ENXIO and time.monotonic() < deadline
            time.sleep(0.05)
    reader.join(10)
    assert got == [b"{}\n" * 20000]
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_a_fifo_output_nobody_reads_is_refused_at_once_and_kept(tmp_path):
    pipe = fifo(tmp_path)
    with pytest.raises(OSError) as info:
        within(10, write_atomic, pipe, "data")
    assert info.value.errno == errno.ENXIO and info.value.filename == str(pipe)
    assert "that no program is reading" in info.value.strerror
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


@pytest.mark.parametrize("kind", ["block device", "socket", "folder"])
def test_an_output_that_is_no_file_to_write_is_refused_and_never_replaced(tmp_path, kind):
    server = None
    if kind == "block device":
        path = device(tmp_path, "disk", stat.S_IFBLK, minor=0)
        check = stat.S_ISBLK
    elif kind == "socket":
        path, server = unix_socket(tmp_path)
        check = stat.S_ISSOCK
    else:
        path = tmp_path / "out.json"
        path.mkdir()
        check = stat.S_ISDIR
    with pytest.raises(OSError) as info:
        write_atomic(path, "data")
    assert info.value.filename == str(path)
    assert check(os.stat(path).st_mode)
    assert [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    if kind != "folder":
        assert f"it is a {kind}, which Mangaka never replaces" in info.value.strerror
    if server is not None:
        server.close()


def test_a_long_file_name_is_written_and_one_too_long_is_named(tmp_path):
    long_name = "a" * 245 + ".json"  # valid (250 bytes); its temporary name would not be
    write_atomic(tmp_path / long_name, "ok")
    assert (tmp_path / long_name).read_text() == "ok"
    assert sorted(p.name for p in tmp_path.iterdir()) == [long_name]
    too_long = tmp_path / ("b" * (NAME_MAX + 1))
    with pytest.raises(OSError) as info:
        write_atomic(too_long, "x")
    assert info.value.errno == errno.ENAMETOOLONG and info.value.filename == str(too_long)


def test_write_refuses_before_any_work_an_output_it_cannot_write(tmp_path, caplog):
    missing = str(tmp_path / "missing.gguf")
    base = ["write", str(CHAPTER), "--model", missing, "-o"]
    too_long = tmp_path / ("c" * 300 + ".json")
    message = one_error([*base, str(too_long)], caplog)
    assert f"more than the {NAME_MAX} a file name may have; give a shorter name" in message
    disk = device(tmp_path, "disk", stat.S_IFBLK, minor=0)
    message = one_error([*base, str(disk)], caplog)
    assert f"-o {disk} is a block device, which Mangaka never replaces" in message
    null = device(tmp_path, "null")
    message = one_error([*base, str(null), "--storyboard"], caplog)
    assert f"-o {null} is a character device" in message and "null.storyboard.png" in message
    # A 250-byte name passes the output checks: what stops it is the missing model, named.
    long_ok = tmp_path / ("d" * 245 + ".json")
    message = one_error([*base, str(long_ok)], caplog)
    assert "missing.gguf" in message and "file name" not in message
    assert stat.S_ISBLK(os.stat(disk).st_mode) and stat.S_ISCHR(os.stat(null).st_mode)


# ------------------------------------------------------------------------------- queue servers


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::1", "is not a valid address (Invalid IPv6 URL)"),
        ("file:///etc/passwd", "only http:// and https:// addresses"),
        ("http://127.0.0.1:99999", "is not a valid address (Port out of range"),
        ("http://" + "a" * 5000, "is 5007 characters long"),
        ("http://127.0.0.1:0", "has no valid host and port"),
        ("http://:8188", "has no valid host and port"),
        ("http://exa mple:80", "has no valid host and port"),
        ("  ", "is empty"),
    ],
    ids=["bracket", "file scheme", "port", "5000 chars", "port 0", "no host", "space", "empty"],
)
def test_queue_refuses_a_server_address_it_cannot_use_before_any_work(tmp_path, caplog, url, said):
    """Each was an "internal error" (aiohttp's InvalidURL) or a connection to the wrong host."""
    workflow = ROOT / "example_workflows" / "api" / "manga_page.json"
    book = ROOT / "prompts" / "samples" / "demo_book.en.txt"
    out = tmp_path / "out"
    message = one_error(
        ["queue", str(book), "--workflow", str(workflow), "--server", url, "--out", str(out)], caplog
    )
    assert message.startswith("--server ") and said in message and "e.g. http://127.0.0.1:8188" in message
    assert not out.exists()


def test_a_server_address_is_completed_and_kept_as_given():
    from mangaka.batch.client import server_url

    assert server_url("127.0.0.1:8188/") == "http://127.0.0.1:8188"
    assert server_url("HTTPS://comfy.example/proxy/") == "HTTPS://comfy.example/proxy"
    assert server_url("http://[::1]:8188") == "http://[::1]:8188"


def test_page_names_a_panel_image_that_is_a_fifo_instead_of_waiting_on_it(tmp_path, caplog):
    panels = tmp_path / "panels"
    panels.mkdir()
    from PIL import Image

    Image.new("RGB", (64, 96), "white").save(panels / "panel_01.png")
    pipe = fifo(panels, "panel_02.png")
    out = tmp_path / "pages"
    message = within(
        30, one_error, ["page", str(SCREENPLAY), "--images", str(panels), "-o", str(out)], caplog
    )
    assert f"--images: panel image {pipe} is a FIFO (named pipe), not a regular file" in message, message
    assert not out.exists()


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["write", "{path}", "--model", "{missing}", "-o", "{out}"], "chapter file"),
        (["book", "{path}", "--model", "{missing}", "--out", "{outdir}"], "book file"),
        (
            ["queue", "{path}", "--workflow", "{workflow}", "--server", "127.0.0.1:1", "--out", "{outdir}"],
            "book file",
        ),
        (
            ["queue", "{chapter}", "--workflow", "{path}", "--server", "127.0.0.1:1", "--out", "{outdir}"],
            "workflow file",
        ),
        (["page", "{path}", "--images", "{outdir}", "-o", "{pages}"], "screenplay file"),
    ],
    ids=["write", "book", "queue book", "queue workflow", "page"],
)
def test_a_huge_input_is_refused_by_its_size_before_it_is_read(tmp_path, caplog, command, what):
    """A 300 MiB file (sparse: nothing is written) is over the 256 MiB any input may be."""
    path = tmp_path / "huge.txt"
    with open(path, "wb") as f:
        f.truncate(300 * 1024 * 1024)
    (tmp_path / "panels").mkdir()
    message = within(30, one_error, command_line(command, path, tmp_path), caplog)
    assert f"{what} {path} is 300 MiB, more than the 256 MiB Mangaka reads; split it" in message, message


@pytest.mark.parametrize("command", ["page", "video"])
@pytest.mark.parametrize(("text", "said"), [(" \n", "is empty"), ("hello there", "no JSON object")])
def test_a_screenplay_file_without_a_screenplay_says_what_file_to_give(tmp_path, caplog, command, text, said):
    """A command reads a file, so the fix is a file (`write -o` makes one), not a node to connect."""
    path = tmp_path / "chapter.json"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / ("out.mp4" if command == "video" else "out")
    message = one_error([command, str(path), "-o", str(out)], caplog)
    assert message.startswith(str(path)) and said in message, message
    assert "python -m mangaka write CHAPTER -o chapter.json" in message and "connect" not in message
    assert not out.exists()
