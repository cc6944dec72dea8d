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
