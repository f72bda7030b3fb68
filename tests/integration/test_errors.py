"""Bad input: the exit code of errors.py, one line on stderr, never a traceback."""

from __future__ import annotations

import json

import pytest

from encbench import errors
from integration_helpers import assert_one_line_error, scratch_dirs

pytestmark = pytest.mark.integration

SMALL = ("--size", "2MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq")


def test_exit_codes_are_the_documented_ones():
    assert errors.UsageError.exit_code == 2
    assert errors.UnknownNameError.exit_code == 3
    assert errors.BadValueError.exit_code == 4
    assert errors.OutputError.exit_code == 5
    assert errors.ResultFileError.exit_code == 6
    assert errors.SchemaVersionError.exit_code == 7
    assert errors.WrongKeyError.exit_code == 8
    assert errors.IncomparableError.exit_code == 9
    assert errors.EXIT_INTERRUPTED == 130


# (extra args after `run SMALL`, exit code, a word the message must contain)
RUN_ERRORS = {
    "unknown-engine": (["--engine", "nope"], 3, "engine"),
    "unknown-workload": (["--workload", "nope"], 3, "workload"),
    "unknown-variant-key": (["--variant", "flavour=sweet"], 3, "flavour"),
    "unknown-variant-value": (["--variant", "cache=lukewarm"], 3, "lukewarm"),
    "variant-without-equals": (["--variant", "cache"], 2, "KEY=VALUE"),
    "variant-empty-value": (["--variant", "cache="], 2, "KEY=VALUE"),
    "bad-variant-number": (["--variant", "page_size=1000"], 4, "page_size"),
    "encrypted-page-size-512": (["--variant", "page_size=512"], 4, "cannot encrypt page_size=512"),
    "unknown-probe": (["--probe", "nope"], 3, "probe"),
    "size-abc": (["--size", "abc"], 4, "--size"),
    "size-0MB": (["--size", "0MB"], 4, "--size"),
    "runs-0": (["--runs", "0"], 4, "--runs"),
    "runs-x": (["--runs", "x"], 4, "--runs"),
    "warmups-x": (["--warmups", "x"], 4, "--warmups"),
    "seed-x": (["--seed", "x"], 4, "--seed"),
    "unwritable-output": (["-o", "/proc/nope/x.json"], 5, "/proc/nope/x.json"),
    "unknown-option": (["--bogus"], 2, "--bogus"),
}


@pytest.mark.parametrize("extra,code,word", RUN_ERRORS.values(), ids=RUN_ERRORS.keys())
def test_run_bad_input(encbench, tmp_path, extra, code, word):
    data, out = tmp_path / "data", tmp_path / "out.json"
    args = ["run", *SMALL, "--data-dir", str(data), "-o", str(out), *extra]
    res = encbench(*args)
    line = assert_one_line_error(res, code)
    assert word in line
    assert res.stdout == ""
    # every name and value is checked before anything is created
    assert not data.exists()
    assert not out.exists()


def test_run_output_is_a_directory(encbench, tmp_path):
    data, out = tmp_path / "data", tmp_path / "a-directory"
    out.mkdir()
    res = encbench("run", *SMALL, "--data-dir", str(data), "-o", str(out))
    line = assert_one_line_error(res, 5)
    assert "directory" in line
    assert not data.exists()
    assert list(out.iterdir()) == []


def test_run_key_file_missing(encbench, tmp_path):
    res = encbench("run", *SMALL, "--data-dir", str(tmp_path / "data"), "-o", str(tmp_path / "o.json"),
                   "--key-file", str(tmp_path / "no-such-key"))
    line = assert_one_line_error(res, 4)
    assert "--key-file" in line
    assert not (tmp_path / "data").exists()


def test_run_key_file_empty(encbench, tmp_path):
    (tmp_path / "key").write_text("\n")
    res = encbench("run", *SMALL, "--data-dir", str(tmp_path / "data"), "-o", str(tmp_path / "o.json"),
                   "--key-file", str(tmp_path / "key"))
    line = assert_one_line_error(res, 4)
    assert "empty" in line


@pytest.mark.parametrize("argv", [["frobnicate"], ["show"], ["show", "x.json", "--bogus"],
                                  ["compare", "a.json"], ["list", "--bogus"], ["--bogus"]],
                         ids=["unknown-command", "show-no-file", "show-bogus-option", "compare-one-file",
                              "list-bogus-option", "global-bogus-option"])
def test_usage_errors(encbench, argv):
    assert_one_line_error(encbench(*argv), 2)


# -- result files that cannot be read ------------------------------------------------------

def test_show_missing_file(encbench, tmp_path):
    line = assert_one_line_error(encbench("show", str(tmp_path / "missing.json")), 6)
    assert "does not exist" in line


def test_show_directory(encbench, tmp_path):
    assert_one_line_error(encbench("show", str(tmp_path)), 6)


def test_show_truncated_file(encbench, happy, tmp_path):
    text = happy[2].read_text()
    half = tmp_path / "half.json"
    half.write_text(text[: len(text) // 2])
    line = assert_one_line_error(encbench("show", str(half)), 6)
    assert "not valid JSON" in line


@pytest.mark.parametrize("content", ["", "not json at all", "[]", '{"hello": 1}', "\x00\x01\x02"],
                         ids=["empty", "garbage", "list", "no-schema-version", "binary"])
def test_show_corrupt_file(encbench, tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert_one_line_error(encbench("show", str(path)), 6)


def test_show_file_lacking_keys(encbench, happy, tmp_path):
    doc = json.loads(happy[2].read_text())
    del doc["runs"]
    path = tmp_path / "noruns.json"
    path.write_text(json.dumps(doc))
    line = assert_one_line_error(encbench("show", str(path)), 6)
    assert "runs" in line


def test_show_non_utf8_file(encbench, tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"schema_version": 1, "x": "\xe9\xff"}')
    assert_one_line_error(encbench("show", str(path)), 6)


def test_show_unknown_schema_version(encbench, happy, tmp_path):
    doc = json.loads(happy[2].read_text())
    doc["schema_version"] = 99
    path = tmp_path / "v99.json"
    path.write_text(json.dumps(doc))
    line = assert_one_line_error(encbench("show", str(path)), 7)
    assert "99" in line
    # compare refuses it the same way
    assert_one_line_error(encbench("compare", str(happy[2]), str(path)), 7)


# -- wrong key ------------------------------------------------------------------------------

RIGHT_KEY, WRONG_KEY = "aaa-right-key-7f3e", "bbb-wrong-key-91c2"


def test_wrong_key(encbench, tmp_path_factory, tmp_path):
    data = tmp_path_factory.mktemp("data-key-aaa")
    args = ("run", *SMALL, "--variant", "cache=warm", "--data-dir", str(data))
    created = encbench(*args, "-o", str(tmp_path / "created.json"), env={"ENCBENCH_KEY": RIGHT_KEY})
    assert created.returncode == 0, str(created)

    out = tmp_path / "wrong.json"
    res = encbench(*args, "-o", str(out), env={"ENCBENCH_KEY": WRONG_KEY})
    line = assert_one_line_error(res, 8)
    assert "key" in line
    assert RIGHT_KEY not in line and WRONG_KEY not in line  # the keys themselves are never printed
    assert res.stdout == ""
    assert "results so far kept" not in line
    assert not out.exists()  # issue 11: an error before any measuring leaves no `failed` result file
    assert scratch_dirs(data) == []
    # the right key, from a file this time, still opens the same data
    key_file = tmp_path / "key"
    key_file.write_text(RIGHT_KEY + "\n")
    ok = encbench(*args, "-o", str(tmp_path / "ok.json"), "--key-file", str(key_file))
    assert ok.returncode == 0, str(ok)
    files = json.loads((tmp_path / "ok.json").read_text())["dataset"]["files"]
    assert all(f["reused"] for f in files.values())


def _malformed_runs_file(tmp_path):
    """A file that passes the loader's top-level checks, but whose runs lack their fields."""
    path = tmp_path / "weird.json"
    path.write_text(json.dumps({"schema_version": 1, "encbench_version": "0.1.0", "environment": {},
                                "engine": {}, "config": {}, "runs": [{"bogus": True}], "status": "complete"}))
    return path


def test_show_malformed_runs_is_one_line(encbench, tmp_path):
    res = encbench("show", str(_malformed_runs_file(tmp_path)))
    assert res.returncode != 0
    assert "Traceback" not in res.stdout + res.stderr
    assert len(res.stderr.splitlines()) == 1, str(res)
    assert res.stderr.startswith("encbench: ")


def test_show_malformed_runs_is_a_result_file_error(encbench, tmp_path):
    assert_one_line_error(encbench("show", str(_malformed_runs_file(tmp_path))), 6)
