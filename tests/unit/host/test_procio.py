"""host/procio: the bytes a server's process tree made the kernel read from storage and write (/proc/PID/io, faked
here): the parent (with the children it reaped) plus its live children, a skipped one left out, an unreadable root
said in words instead of a figure."""

from __future__ import annotations

from pathlib import Path

from encbench.host import procio

IO = ("rchar: {r}0\nwchar: 7\nsyscr: 1\nsyscw: 1\nread_bytes: {r}\nwrite_bytes: {w}\n"
      "cancelled_write_bytes: {c}\n")


def _proc(root: Path, pid: int, read: int, written: int, cancelled: int = 0, kids=()) -> None:
    d = root / str(pid)
    (d / "task" / str(pid)).mkdir(parents=True)
    (d / "io").write_text(IO.format(r=read, w=written, c=cancelled))
    (d / "task" / str(pid) / "children").write_text(" ".join(map(str, kids)) + (" " if kids else ""))


def test_a_tree_sums_the_parent_and_its_live_children_but_the_skipped_one(tmp_path):
    _proc(tmp_path, 10, 8192, 4096, kids=(11, 12, 13))
    _proc(tmp_path, 11, 16384, 0)
    _proc(tmp_path, 12, 1, 8192, cancelled=4096)
    _proc(tmp_path, 13, 10**9, 10**9)  # the reading session's own backend
    got = procio.tree_io(10, proc=tmp_path, skip=(13,))
    assert (got.read_bytes, got.written_bytes, got.pids, got.why) == (8192 + 16384 + 1, 4096 + 4096, 3, None)
    assert procio.read_io(11, tmp_path) == {"read_bytes": 16384, "write_bytes": 0, "cancelled_write_bytes": 0}


def test_a_child_gone_between_listing_and_reading_is_left_out(tmp_path):
    _proc(tmp_path, 10, 100, 0, kids=(11, 99))
    _proc(tmp_path, 11, 5, 0)
    assert procio.tree_io(10, proc=tmp_path).read_bytes == 105


def test_an_unreadable_or_missing_root_gives_why_not_a_figure(tmp_path, monkeypatch):
    got = procio.tree_io(4242, proc=tmp_path)
    assert got.read_bytes is None and "could not be read" in got.why
    _proc(tmp_path, 10, 1, 1)

    def denied(self, *a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", denied)
    got = procio.tree_io(10, proc=tmp_path)
    assert got.read_bytes is None and "needs root or that user" in got.why


def test_a_file_without_the_byte_fields_is_refused(tmp_path):
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "io").write_text("rchar: 1\n")
    assert procio.tree_io(7, proc=tmp_path).why.startswith(f"{tmp_path}/7/io could not be read")


def test_the_filesystem_type_of_a_process_working_directory(tmp_path):
    import os

    d = tmp_path / "5"
    d.mkdir()
    (d / "cwd").symlink_to(tmp_path)
    dev = tmp_path.stat().st_dev
    (d / "mountinfo").write_text(f"22 1 0:1 / / rw - tmpfs none rw\n"
                                 f"36 22 {os.major(dev)}:{os.minor(dev)} / /data rw,relatime shared:1 - ext4 "
                                 "/dev/loop3 rw\n")
    assert procio.cwd_fstype(5, proc=tmp_path) == "ext4"
    assert procio.cwd_fstype(6, proc=tmp_path) is None
