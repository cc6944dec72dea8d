"""Files read whole and bounded, and written whole or not at all.

Reading: only a regular file is read (``read_input``): a FIFO, a device or a socket could block
forever or never end (``/dev/zero``), so it is refused by name before it is opened, and a file
larger than the reader's limit is refused before it is read.

Writing (``write_atomic``): a regular file (or a new one) is written through a temporary file in
the same folder and renamed over it, so readers never see half a file. A path the user names that
is a character device (``/dev/null``, a terminal) or a FIFO with a reader is written through, as
a shell redirection would; nothing that is not a regular file is ever replaced by the rename (a
block device, a socket or a folder is refused).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .errors import InputError
from .jsontext import loads

# Every text input of the pack (a book, a screenplay, a bible, a workflow) is far below this: a
# long web novel is tens of megabytes. A larger file is refused before it is read.
MAX_INPUT_BYTES = 256 * 1024 * 1024
# The longest file name most file systems take (bytes, ext4/xfs/btrfs/tmpfs).
NAME_MAX = 255
_TEMP_SUFFIX_BYTES = len(".XXXXXXXX.tmp") + 1


def _file_mode() -> int:
    """The mode ``open()`` gives a new file under this process's umask (mkstemp gives 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _file_mode()


def file_kind(mode: int) -> str:
    """What a ``stat`` mode is, in words: "file", "folder", "FIFO (named pipe)", …"""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.0f} MiB" if size >= 1024 * 1024 else f"{size} bytes"


def check_input_file(path: str | Path, what: str, *, limit: int = MAX_INPUT_BYTES) -> os.stat_result:
    """``path`` is a regular file of at most ``limit`` bytes (its ``stat``); ``InputError`` naming
    ``what``, the file and the fix otherwise. Nothing is opened: a FIFO or a device is refused
    before a read could block or never end."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{what} {path} not found") from None
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    kind = file_kind(st.st_mode)
    if kind == "folder":
        raise InputError(f"{what} {path} is a folder; give the path of a file")
    if kind != "file":
        raise InputError(
            f"{what} {path} is a {kind}, not a regular file: reading it could wait forever or never "
            "end; save its content to a file and give that file"
        )
    if st.st_size > limit:
        raise InputError(
            f"{what} {path} is {_mib(st.st_size)}, more than the {_mib(limit)} Mangaka reads; "
            "split it into smaller files"
        )
    return st


def read_input(path: str | Path, what: str, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``check_input_file``), read whole; ``InputError``
    otherwise. The file is opened without blocking, so a FIFO swapped in after the check is still
    refused, and at most ``limit`` bytes are read even if it grows meanwhile."""
    path = Path(path)
    check_input_file(path, what, limit=limit)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        kind = file_kind(os.fstat(fh.fileno()).st_mode)
        if kind != "file":
            raise InputError(f"{what} {path} is a {kind}, not a regular file; give a file")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(
            f"{what} {path} is more than the {_mib(limit)} Mangaka reads; split it into smaller files"
        )
    return data


def read_text(path: str | Path, what: str, *, limit: int = MAX_INPUT_BYTES) -> str:
    """A UTF-8 text file (a BOM is dropped); ``InputError`` names ``what`` and the file otherwise."""
    raw = read_input(path, what, limit=limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{what} {Path(path)} is not UTF-8 text; save it as UTF-8") from None


def parse_json(text: str | bytes, source: str, fix: str = "") -> Any:
    """``text`` parsed as JSON; ``InputError`` names ``source``, the line and column, and ``fix``
    (appended after "; ") when it is not valid JSON or is nested too deeply (``mangaka.jsontext``)."""
    return loads(text, source, fix)


def name_too_long(path: str | Path) -> bool:
    """``path``'s last part is longer than a file name may be (``NAME_MAX`` bytes)."""
    return len(os.fsencode(Path(path).name)) > NAME_MAX


def written_through(kind: str) -> bool:
    """Whether an output of this ``file_kind`` is written through (a character device, a FIFO)
    rather than replaced by a new file: anything else that is not a file is refused."""
    return kind == "character device" or kind.startswith("FIFO")


def _existing_kind(path: Path) -> str | None:
    try:
        return file_kind(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _write_through(path: Path, raw: bytes, kind: str) -> None:
    """Write ``raw`` into the character device or FIFO ``path``, as ``> path`` in a shell would; a
    FIFO nobody reads is refused (``ENXIO``) rather than waited on."""
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    if kind.startswith("FIFO"):
        flags |= os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(
                errno.ENXIO, "it is a FIFO (named pipe) that no program is reading; start the reader "
                "first or give a file path", str(path),
            ) from None  # fmt: skip
        raise
    try:
        if flags & os.O_NONBLOCK:
            os.set_blocking(fd, True)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file in ``path``'s folder (made if missing), open for writing, with the mode
    an output file gets."""
    if name_too_long(path):
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a folder of the path should be
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
    # The temporary name must itself be a valid name: a long one gets a short prefix.
    fits = len(os.fsencode(path.name)) + _TEMP_SUFFIX_BYTES + 1 <= NAME_MAX
    prefix = f".{path.name}." if fits else ".mangaka-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    if hasattr(os, "fchmod"):  # mkstemp makes it 0600; the output gets the usual mode
        os.fchmod(fd, FILE_MODE)
    return fd, tmp


def write_atomic(path: str | Path, data: str | bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder.

    Readers never see a half-written file. With ``overwrite=False`` an existing file is never
    replaced: ``FileExistsError`` is raised instead (the check and the rename are one atomic step).
    A character device or a FIFO at ``path`` is written through (module docstring); a block
    device, a socket or a folder is refused, never replaced.
    Any ``OSError`` (a full disk, a file-size limit, a folder that cannot be made) is raised with
    ``path`` as its ``filename`` and the same ``errno`` (so the same subclass), whatever step failed.
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = None
    try:
        kind = _existing_kind(path)
        if kind is not None and kind != "file":
            if not overwrite:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))
            if written_through(kind):
                _write_through(path, raw, kind)
                return path
            code = errno.EISDIR if kind == "folder" else errno.EINVAL
            raise OSError(code, f"it is a {kind}, which Mangaka never replaces; give a file path")
        fd, tmp = _temp_beside(path)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if path exists
    except OSError as exc:  # named after the file being written, never the temporary file
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return path


class _WriterError(Exception):
    """Carries an exception raised inside ``atomic_output``'s block past its own handling."""


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through, for outputs too large to hold in memory (a book's
    CBZ): it is a temporary file in the same folder, renamed over ``path`` only when the ``with``
    block ends without an exception and removed otherwise, so ``path`` is never half-written.
    Only a regular file (or a new one) is written this way; anything else at ``path`` is refused.
    ``OSError`` is raised with ``path`` as its ``filename``, as in ``write_atomic``."""
    path = Path(path)
    tmp = None
    try:
        kind = _existing_kind(path)
        if kind is not None and kind != "file":
            code = errno.EISDIR if kind == "folder" else errno.EINVAL
            raise OSError(code, f"it is a {kind}, which Mangaka never replaces; give a file path")
        fd, tmp = _temp_beside(path)
        with os.fdopen(fd, "w+b") as fh:
            try:
                yield fh
            except BaseException as exc:  # the writer's own error, raised as it is
                raise _WriterError() from exc
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except _WriterError as wrapped:
        raise wrapped.__cause__ from None  # type: ignore[misc]
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
