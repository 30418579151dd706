"""Output files the user names: whole or not at all, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from infermeter.errors import PathError
from infermeter.outfile import replacing


def test_the_file_appears_whole_and_its_folder_is_made(tmp_path: Path) -> None:
    target = tmp_path / "new" / "sub" / "report.html"
    with replacing(target) as tmp:
        tmp.write_text("<html>")
        assert not target.exists()  # only the temporary sibling so far
    assert target.read_text() == "<html>"
    assert list(target.parent.iterdir()) == [target]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_part(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old")
    with pytest.raises(ValueError), replacing(target) as tmp:
        tmp.write_text("half")
        raise ValueError("the writer failed")
    assert target.read_text() == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_an_unwritable_path_is_a_one_line_path_error(tmp_path: Path) -> None:
    # Used to end in "internal error: FileNotFoundError" for report -o,
    # results export and model calibrate --write.
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    message = r"Cannot write .*a-file/x.html.*writable path"
    with pytest.raises(PathError, match=message), replacing(blocked / "x.html") as tmp:
        tmp.write_text("never")
