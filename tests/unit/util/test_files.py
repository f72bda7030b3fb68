"""util/files (issue 21, items 4 and 5): the one reader of the files a user names, and the --data-dir check.

Real files only: FIFOs made with os.mkfifo, /dev/zero, a sparse file larger than the bound, a directory made
immutable with chattr +i (root only; the attribute is always removed again)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

import pytest

from encbench.errors import BadValueError, ResultFileError, UsageError
from encbench.util import files
from encbench.util.units import parse_size, split_list

LIMIT = 1000


def _in_thread(fn, *args, **kwargs):
    """fn's result or exception, or 'blocked' if it has not returned within 5 s."""
    out: dict = {}

    def target():
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(5)
    return "blocked" if t.is_alive() else out


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    yield path
    try:  # a reader still blocked on it (the old behaviour) is released
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


def test_a_fifo_is_refused_and_never_blocks(fifo):
    out = _in_thread(files.read_regular, fifo, what="key", limit=LIMIT, error=BadValueError)
    assert out != "blocked"
    assert isinstance(out["error"], BadValueError) and "is a FIFO, not a regular file" in str(out["error"])


def test_dev_zero_is_refused_not_read():
    with pytest.raises(ResultFileError, match="character device") as ei:
        files.read_regular("/dev/zero", what="result file", limit=LIMIT, error=ResultFileError)
    assert ei.value.exit_code == 6


def test_a_file_larger_than_the_bound_is_refused_unread(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(64 * 2**30)  # sparse: 64 GiB that take no disk
    with pytest.raises(ResultFileError, match="larger than") as ei:
        files.read_regular(path, what="result file", limit=LIMIT, error=ResultFileError)
    assert str(path) in str(ei.value)


def test_the_bound_is_inclusive(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * LIMIT)
    assert files.read_regular(path, what="f", limit=LIMIT, error=ResultFileError) == b"x" * LIMIT
    path.write_bytes(b"x" * (LIMIT + 1))
    with pytest.raises(ResultFileError, match="larger than"):
        files.read_regular(path, what="f", limit=LIMIT, error=ResultFileError)


def test_a_symlink_to_a_regular_file_is_read(tmp_path):
    (tmp_path / "r").write_text("hello")
    (tmp_path / "l").symlink_to(tmp_path / "r")
    assert files.read_text(tmp_path / "l", what="f", limit=LIMIT, error=ResultFileError) == "hello"


def test_missing_and_directory(tmp_path):
    with pytest.raises(BadValueError, match="does not exist"):
        files.read_regular(tmp_path / "none", what="--key-file", limit=LIMIT, error=BadValueError)
    with pytest.raises(BadValueError, match="is a directory"):
        files.read_regular(tmp_path, what="--key-file", limit=LIMIT, error=BadValueError)


def test_text_that_is_not_utf8_is_its_own_error_and_shows_no_byte(tmp_path):
    path = tmp_path / "key"
    path.write_bytes(b"secret\xffkey")
    with pytest.raises(BadValueError, match="is not UTF-8 text") as ei:
        files.read_text(path, what="--key-file", limit=LIMIT, error=ResultFileError, encoding_error=BadValueError)
    assert "ff" not in str(ei.value).lower().replace(str(path).lower(), "")  # a byte of a key is never shown


# -- --data-dir ------------------------------------------------------------------------------------

HINT = "give a directory"


def test_data_dir_existing_or_to_be_made_is_accepted_and_nothing_is_made(tmp_path):
    files.check_directory(tmp_path, what="--data-dir", hint=HINT)
    files.check_directory(tmp_path / "a" / "b", what="--data-dir", hint=HINT)
    assert os.listdir(tmp_path) == []  # the probe is gone, nothing was created


@pytest.mark.parametrize("kind", ["regular file", "FIFO"])
def test_data_dir_that_is_not_a_directory(tmp_path, kind):
    path = tmp_path / "x"
    path.write_text("") if kind == "regular file" else os.mkfifo(path)
    for given in (path, path / "sub"):
        with pytest.raises(BadValueError, match=f"is a {kind}, not a directory") as ei:
            files.check_directory(given, what="--data-dir", hint=HINT)
        assert ei.value.exit_code == 4


def test_data_dir_proc():
    with pytest.raises(BadValueError, match="cannot create anything in it"):
        files.check_directory("/proc", what="--data-dir", hint=HINT)


@pytest.fixture
def immutable_dir(tmp_path):
    if os.geteuid() != 0 or not shutil.which("chattr"):
        pytest.skip("chattr +i needs root")
    path = tmp_path / "immutable"
    path.mkdir()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_data_dir_immutable(immutable_dir):
    for given in (immutable_dir, immutable_dir / "sub"):
        with pytest.raises(BadValueError, match="cannot create anything in it") as ei:
            files.check_directory(given, what="--data-dir", hint=HINT)
        assert "Operation not permitted" in str(ei.value)


def test_free_space_is_checked_against_the_filesystem(tmp_path):
    free = files.free_bytes(tmp_path)
    assert free == shutil.disk_usage(tmp_path).free
    files.check_free_space(tmp_path, free // 2, what="--size 1 MB", hint="h")
    with pytest.raises(BadValueError, match=r"--size 1 MB needs about .* free in .*; .* free there") as ei:
        files.check_free_space(tmp_path / "not-yet", free * 2, what="--size 1 MB", hint="h")
    assert ei.value.exit_code == 4


# -- values ---------------------------------------------------------------------------------------

def test_a_size_of_400_digits_is_out_of_range_not_an_overflow():
    with pytest.raises(BadValueError, match="out of range") as ei:
        parse_size("9" * 400)
    assert len(str(ei.value)) < 200  # the value is cut in the message


@pytest.mark.parametrize("text", ["a,,b", "a,", ",a", " , "])
def test_split_list_refuses_empty_items(text):
    with pytest.raises(UsageError, match="empty value between commas"):
        split_list(text, what=f"--workload {text!r}", example="--workload a,b")
    assert split_list(" a , b ", what="--workload", example="") == ["a", "b"]
