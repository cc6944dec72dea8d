"""Where a command writes: every output checked before any model loads (the folder exists and can
be written, no output is one of the inputs: ``-o chapter.txt`` would overwrite the chapter), and
the files written beside a screenplay (its storyboard pictures, its plan)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import InputError
from ..fileio import NAME_MAX, file_kind, name_too_long, written_through
from ..page.layout import LayoutOptions, page_sizes

STORYBOARD_SUFFIX = ".storyboard"


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_writable_folder(folder: Path, flag: str, output: Path, *, may_create: bool) -> None:
    """``folder`` is a folder this process can write into (or, with ``may_create``, can create)."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        if not may_create:
            raise InputError(
                f"{flag} {output}: the folder {folder} does not exist; create it first "
                f"(mkdir -p {folder}) or give a path in an existing folder"
            )
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"{flag} {output}: {probe} is a file, not a folder; give a path in a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(
            f"{flag} {output}: the folder {probe} is not writable by this user; "
            "give a path in a folder you can write to"
        )
    _probe_write(probe, flag, output)


def _probe_write(folder: Path, flag: str, output: Path) -> None:
    """Make and remove a file in ``folder``: the permission bits do not tell everything (root
    passes ``os.access`` on a read-only or virtual file system such as /proc)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".mangaka-probe-", dir=folder)
    except OSError as exc:
        raise InputError(
            f"{flag} {output}: cannot write in the folder {folder} ({exc.strerror or exc}); "
            "give a path in a folder you can write to"
        ) from None
    os.close(fd)
    os.unlink(name)


def make_output_folder(folder: Path, flag: str, output: Path) -> Path:
    """Create ``folder`` (and its parents) and prove a file can be written in it: the last check
    of a run that writes there, so nothing fails to save after the model has worked."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"{flag} {output}: the folder {folder} cannot be made ({exc.strerror or exc}); "
            "give a path in a folder you can write to"
        ) from None
    _probe_write(folder, flag, output)
    return folder


def check_not_an_input(outputs: Mapping[str, Path], inputs: Mapping[str, Path | None], flag: str) -> None:
    for what, path in outputs.items():
        for name, source in inputs.items():
            if source is not None and _same_file(path, source):
                where = f"{flag} {path}" if what == "output" else f"the {what} {path} (named after {flag})"
                raise InputError(
                    f"{where} is {name} {source}: writing it would overwrite {name}; "
                    f"give {flag} another file name"
                )


def check_output_file(
    output: Path,
    inputs: Mapping[str, Path | None],
    *,
    derived: Mapping[str, Path] | None = None,
    flag: str = "-o",
) -> Path:
    """Refuse an output file that cannot be written or that is one of ``inputs`` (by name → path).

    ``derived``: the files written beside it (the plan, the storyboard), checked against the
    inputs too. Returns ``output``."""
    for path in (output, *(derived or {}).values()):
        if name_too_long(path):
            raise InputError(
                f"{flag} {output}: the file name {path.name[:40]}… is {len(os.fsencode(path.name))} bytes, "
                f"more than the {NAME_MAX} a file name may have; give a shorter name"
            )
    if output.is_dir():
        raise InputError(
            f"{flag} {output} is a folder; give a file name in it, e.g. {output / 'chapter.screenplay.json'}"
        )
    try:
        kind = file_kind(os.stat(output).st_mode)
    except OSError:
        kind = None  # absent (or unreachable: the folder checks below say why)
    if kind is not None and kind != "file":
        if not written_through(kind):
            raise InputError(f"{flag} {output} is a {kind}, which Mangaka never replaces; give a file path")
        if derived:
            beside = ", ".join(str(p) for p in derived.values())
            raise InputError(
                f"{flag} {output} is a {kind}: the files written beside the screenplay ({beside}) would "
                "land in its folder; give a file path, or leave out the options that write them"
            )
        return output  # written through, as a shell redirection would (fileio.write_atomic)
    check_writable_folder(output.parent, flag, output, may_create=False)
    check_not_an_input({"output": output, **(derived or {})}, inputs, flag)
    return output


def check_output_folder(
    folder: Path, inputs: Mapping[str, Path | None], *, flag: str = "-o", what: str = "the screenplays"
) -> Path:
    """Refuse an output folder that is a file, or that cannot be made or written."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{flag} {folder} is a file, not a folder; give a folder for {what}")
    check_writable_folder(folder, flag, folder, may_create=True)
    check_not_an_input({"output": folder}, inputs, flag)
    return folder


def storyboard_path(output: Path, page: int = 1) -> Path:
    """The storyboard picture beside the screenplay ``output``: ``X.json`` and
    ``X.screenplay.json`` both give ``X.storyboard.png``; page 2 on: ``X.storyboard-2.png``."""
    stem = output.name
    for suffix in (".json", ".screenplay"):
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
    number = "" if page == 1 else f"-{page}"
    return output.with_name(f"{stem}{STORYBOARD_SUFFIX}{number}.png")


def thinking_path(output: Path) -> Path:
    """The plan beside the screenplay ``output`` (``--think``)."""
    return output.with_suffix(".thinking.txt")


def storyboard_page_count(panels: int) -> int:
    return len(page_sizes(panels, LayoutOptions().panels_per_page))
