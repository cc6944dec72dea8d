"""Files written whole or not at all."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Any


def _file_mode() -> int:
    """The mode ``open()`` gives a new file under this process's umask (mkstemp gives 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _file_mode()


def read_text(path: str | Path, what: str) -> str:
    """A UTF-8 text file (a BOM is dropped); ``InputError`` names ``what`` and the file otherwise."""
    from .errors import InputError

    path = Path(path)
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{what} {path} not found") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {path} is not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read: {exc}") from None


def parse_json(text: str | bytes, source: str, fix: str = "") -> Any:
    """``text`` parsed as JSON; ``InputError`` names ``source``, the line and column, and ``fix``
    (appended after "; ") when it is not valid JSON or is nested too deeply (``mangaka.jsontext``)."""
    from .jsontext import loads

    return loads(text, source, fix)


def write_atomic(path: str | Path, data: str | bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder.

    Readers never see a half-written file. With ``overwrite=False`` an existing file is never
    replaced: ``FileExistsError`` is raised instead (the check and the rename are one atomic step).
    Any ``OSError`` (a full disk, a file-size limit, a folder that cannot be made) is raised with
    ``path`` as its ``filename`` and the same ``errno`` (so the same subclass), whatever step failed.
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = None
    try:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where a folder of the path should be
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), FILE_MODE)
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
