"""Parse, dispatch, and turn every error into one line: the command line's one way out.

``build_parser`` asks each command module in ``COMMANDS`` (``cli/__init__.py``) to add its parser;
``main`` runs the chosen command's ``run(args)`` through ``run_command``, which never lets a
traceback reach the user.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from .. import procs
from ..errors import MangakaError
from ..fileio import write_atomic
from . import COMMANDS

log = logging.getLogger("mangaka")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mangaka", description="Mangaka: novel chapter → manga")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.{name}").add_parser(sub)
    return parser


REPORT_URL = "https://github.com/mangaka-comfy/comfyui-mangaka/issues"
# What to do about an OSError, by errno; the path and the system's words come first.
OS_ERROR_FIXES = {
    errno.ENOSPC: "free some space or write somewhere else",
    errno.EDQUOT: "free some space or write somewhere else",
    errno.EFBIG: "the file is larger than this shell lets a program write (ulimit -f); raise the limit",
    errno.EACCES: "give a path this user may use, or change its permissions",
    errno.EPERM: "give a path this user may use, or change its permissions",
    errno.EROFS: "that file system is read-only; give a path on a writable one",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
    errno.EISDIR: "it is a folder; give a file",
    errno.EEXIST: "it is in the way; move it or give another path",
    errno.ENAMETOOLONG: "give a shorter path",
    errno.EMFILE: "too many files are open; raise the limit (ulimit -n)",
}


def os_error_line(exc: OSError) -> str:
    """One line for an ``OSError``: the path(s), the cause as the system words it, and a fix."""
    paths = " → ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    cause = exc.strerror or str(exc) or type(exc).__name__
    fix = OS_ERROR_FIXES.get(exc.errno or -1)
    return f"{paths + ': ' if paths else ''}{cause}{'; ' + fix if fix else ''}"


def report_bug(exc: BaseException, argv: list[str] | None) -> str:
    """The line for an exception no code path expected: it is a bug; the traceback is saved to a
    file (logged at debug level when it cannot be) for the report."""
    command = " ".join(["python -m mangaka", *(sys.argv[1:] if argv is None else argv)])
    text = f"{command}\n\n{''.join(traceback.format_exception(exc))}"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        saved = write_atomic(Path(tempfile.gettempdir()) / f"mangaka-bug-{stamp}-{os.getpid()}.txt", text)
        where = f"the traceback is in {saved}"
    except OSError:
        saved = None
        where = "run it again with -v to see the traceback"
    log.debug("%s", text)
    return (
        f"internal error, a bug in Mangaka: {type(exc).__name__}: {exc}. Please report it at "
        f"{REPORT_URL} with the command you ran; {where}"
    )


Command = Callable[[argparse.Namespace], int]


def run_command(func: Command, args: argparse.Namespace, argv: list[str] | None = None) -> int:
    """``func(args)``'s exit code; every error it raises becomes one logged error: a
    ``MangakaError`` as it is worded (1), Ctrl-C "interrupted" (130), an ``OSError`` one line with
    its path and cause (1), anything else a bug, said so on one line with how to report it (1).
    Never a bare traceback."""
    try:
        return func(args)
    except MangakaError as exc:
        log.error("%s", exc)  # as worded: some list their problems, one a line
        return 1
    except KeyboardInterrupt:
        log.error("interrupted")
        return 130
    except OSError as exc:
        log.error("%s", one_line(os_error_line(exc)))
        return 1
    except Exception as exc:  # noqa: BLE001 - the last resort: a bug, said so, with how to report it
        log.error("%s", one_line(report_bug(exc, argv)))
        return 1


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(message: str) -> str:
    """``message`` on one line: a control character (a newline in a file name) is written as its
    escape (``\\n``)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], message)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    if hasattr(signal, "SIGXFSZ") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past `ulimit -f` a write fails (EFBIG), no kill
    with procs.terminate_as_interrupt():  # SIGTERM ends the run as Ctrl-C does, children included
        return run_command(args.func, args, argv)
