from __future__ import annotations

import pytest

from mangaka.fileio import write_atomic


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a" / "out.json"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


def test_write_atomic_never_overwrites_when_asked(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("keep me")
    with pytest.raises(FileExistsError):
        write_atomic(target, "new", overwrite=False)
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_written_files_get_the_usual_permissions_not_mkstemps_0600(tmp_path):
    import os
    import stat

    mask = os.umask(0o022)
    try:
        from mangaka import fileio

        path = write_atomic(tmp_path / "page.png", b"x")
        assert stat.S_IMODE(path.stat().st_mode) == fileio.FILE_MODE
        assert fileio.FILE_MODE & 0o044  # readable by others, like a file from open()
    finally:
        os.umask(mask)


def test_read_text_names_the_file_and_the_fix(tmp_path):
    from mangaka.errors import InputError
    from mangaka.fileio import read_text

    (tmp_path / "ok.json").write_bytes(b"\xef\xbb\xbf{}")
    assert read_text(tmp_path / "ok.json", "bible file") == "{}"  # the BOM is dropped
    with pytest.raises(InputError, match=r"bible file .*missing.json not found"):
        read_text(tmp_path / "missing.json", "bible file")
    (tmp_path / "latin1.json").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InputError, match="is not UTF-8 text; save it as UTF-8"):
        read_text(tmp_path / "latin1.json", "bible file")
