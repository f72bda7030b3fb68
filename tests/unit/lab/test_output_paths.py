"""results.check_writable / write_atomic / check_readable (issue 11, items 4 and 5): a device node,
FIFO, socket or symlink is never replaced by a regular file, a missing directory is never created,
and a file to read must be a regular file. Only temporary paths are used (never /dev/null)."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from encbench.lab import results
from encbench.util import files
from encbench.errors import OutputError, ResultFileError


def _char_device(tmp_path):
    path = tmp_path / "null"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private twin of /dev/null
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here (not root)")
    return path


def _special(tmp_path, kind):
    if kind == "character device":
        return _char_device(tmp_path)
    path = tmp_path / kind.replace(" ", "-")
    if kind == "symbolic link":
        (tmp_path / "target.json").write_text("precious")
        path.symlink_to(tmp_path / "target.json")
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    return path


KINDS = ["symbolic link", "FIFO", "socket", "character device"]


@pytest.mark.parametrize("kind", KINDS)
def test_special_outputs_are_refused_and_left_alone(tmp_path, kind):
    path = _special(tmp_path, kind)
    before = os.lstat(path)
    with pytest.raises(OutputError, match=f"is a {kind}") as ei:
        files.check_writable(path)
    assert ei.value.exit_code == 5
    with pytest.raises(OutputError, match=f"is a {kind}"):
        results.write_atomic(path, {"schema_version": 1})
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no temporary file left
    if kind == "symbolic link":
        assert (tmp_path / "target.json").read_text() == "precious"


def test_a_regular_file_is_still_replaced(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    files.check_writable(path)
    results.write_atomic(path, {"schema_version": 1})
    assert path.read_text().startswith("{")


@pytest.mark.parametrize("kind", ["FIFO", "socket", "character device"])
def test_special_inputs_are_refused_without_opening(tmp_path, kind):
    path = _special(tmp_path, kind)
    with pytest.raises(ResultFileError, match=f"is a {kind}") as ei:
        results.check_readable(path)  # a FIFO would block here if it were opened
    assert ei.value.exit_code == 6


def test_readable_follows_a_symlink_to_a_regular_file(tmp_path):
    (tmp_path / "r.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "r.json")
    results.check_readable(tmp_path / "link.json")
    with pytest.raises(ResultFileError, match="does not exist"):
        results.check_readable(tmp_path / "missing.json")
