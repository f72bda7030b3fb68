"""encbench.lab.results: loading, checking and writing result files; error classes."""

from __future__ import annotations

import json
import os
import pickle
import stat
from pathlib import Path

import pytest

from encbench import errors
from encbench.lab import results
from encbench.util import files
from encbench.errors import (
    EncbenchError, OutputError, ResultFileError, SchemaVersionError, UnknownNameError,
)

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

GOLDEN = TESTS / "golden" / "results-v1.json"


def _minimal(**over) -> dict:
    doc = {"schema_version": 1, "encbench_version": "0.1.0",
           "environment": {"cpu": {"model": "x", "logical_cores": 2, "flags": {}}, "kernel": "6.1"},
           "engine": {"name": "sqlite", "axis": "encryption", "axis_baseline": "off", "variant_keys": []},
           "config": {"size_bytes": 10**6}, "runs": [], "status": "complete"}
    doc.update(over)
    return doc


def _write(tmp_path: Path, text: str, name: str = "r.json") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# --- load ---------------------------------------------------------------------------------

def test_load_golden_v1():
    doc = results.load(GOLDEN)
    assert doc["schema_version"] == 1
    assert doc["status"] in results.STATUSES
    for key in results.REQUIRED_KEYS:
        assert key in doc
    assert isinstance(doc["runs"], list) and doc["runs"]


def test_load_accepts_str_path(tmp_path):
    p = _write(tmp_path, json.dumps(_minimal()))
    assert results.load(str(p)) == _minimal()


def test_load_truncated_json(tmp_path):
    text = GOLDEN.read_text()
    p = _write(tmp_path, text[: len(text) // 2])
    with pytest.raises(ResultFileError) as ei:
        results.load(p)
    e = ei.value
    assert type(e) is ResultFileError
    assert e.exit_code == 6
    assert "not valid JSON" in str(e)
    assert "line " in str(e) and "column " in str(e)
    assert e.hint


def test_load_empty_file(tmp_path):
    with pytest.raises(ResultFileError, match="not valid JSON"):
        results.load(_write(tmp_path, ""))


def test_load_binary_garbage(tmp_path):
    p = tmp_path / "r.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ResultFileError) as ei:
        results.load(p)
    assert ei.value.exit_code == 6


def test_load_unknown_schema_version(tmp_path):
    p = _write(tmp_path, json.dumps(_minimal(schema_version=99)))
    with pytest.raises(SchemaVersionError) as ei:
        results.load(p)
    e = ei.value
    assert e.exit_code == 7
    assert isinstance(e, ResultFileError)  # a kind of unreadable result file
    assert "99" in str(e)
    assert e.hint


@pytest.mark.parametrize("text", ["[1, 2, 3]", "\"a string\"", "42", "null", "{}", "{\"runs\": []}"])
def test_load_not_a_result_file(tmp_path, text):
    with pytest.raises(ResultFileError) as ei:
        results.load(_write(tmp_path, text))
    assert type(ei.value) is ResultFileError
    assert "no schema_version" in str(ei.value)


@pytest.mark.parametrize("missing", results.REQUIRED_KEYS[1:])
def test_load_missing_required_key(tmp_path, missing):
    doc = _minimal()
    del doc[missing]
    with pytest.raises(ResultFileError) as ei:
        results.load(_write(tmp_path, json.dumps(doc)))
    assert type(ei.value) is ResultFileError
    assert missing in str(ei.value)


def test_load_runs_not_a_list(tmp_path):
    with pytest.raises(ResultFileError, match="runs is an object, not a list"):
        results.load(_write(tmp_path, json.dumps(_minimal(runs={}))))


def test_load_missing_file(tmp_path):
    with pytest.raises(ResultFileError, match="does not exist") as ei:
        results.load(tmp_path / "nope.json")
    assert ei.value.exit_code == 6


def test_load_directory(tmp_path):
    with pytest.raises(ResultFileError, match="is a directory"):
        results.load(tmp_path)


@pytest.mark.parametrize("version", [True, 1.0])
def test_load_rejects_non_integer_schema_version(tmp_path, version):
    with pytest.raises(SchemaVersionError):
        results.load(_write(tmp_path, json.dumps(_minimal(schema_version=version))))


# --- write_atomic -------------------------------------------------------------------------

def test_write_atomic_round_trip_and_no_temp_files(tmp_path):
    p = tmp_path / "out.json"
    run = {"workload": "scan-eq", "variant": {"encryption": "on"}, "variant_label": "encryption=on",
           "operations": [{"operation": "scan", "metrics": {"wall_s": 0.5}}]}
    doc = _minimal(runs=[run], path=Path("/x/y"))
    results.write_atomic(p, doc)
    assert os.listdir(tmp_path) == ["out.json"]
    loaded = results.load(p)
    assert loaded["runs"] == [run]
    assert loaded["path"] == "/x/y"  # Path objects are written as strings
    assert p.read_text().endswith("}\n")


@pytest.mark.parametrize("run,problem", [
    ([1], r"runs\[0\] is a list, not an object"),
    ({"variant": {}, "variant_label": "x", "operations": []}, r"runs\[0\] has no 'workload'"),
    ({"workload": "w", "variant": {}, "variant_label": "x", "operations": [{"operation": "o"}]},
     r"runs\[0\].operations\[0\] has no 'metrics'"),
    ({"workload": "w", "variant": {}, "variant_label": "x",
      "operations": [{"operation": "o", "metrics": {"wall_s": "fast"}}]},
     r"runs\[0\].operations\[0\].metrics.wall_s is a string, not a number"),
])
def test_load_rejects_malformed_runs(tmp_path, run, problem):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(_minimal(runs=[run])))
    with pytest.raises(ResultFileError, match=problem) as ei:
        results.load(p)
    assert ei.value.exit_code == 6


def test_write_atomic_replaces_content(tmp_path):
    p = tmp_path / "out.json"
    results.write_atomic(p, _minimal(status="running", runs=[1, 2, 3]))
    results.write_atomic(p, _minimal(status="complete", runs=[]))
    doc = json.loads(p.read_text())
    assert doc["status"] == "complete" and doc["runs"] == []
    assert os.listdir(tmp_path) == ["out.json"]


def test_write_atomic_uses_to_dict(tmp_path):
    from encbench.analysis.stats import summarize
    p = tmp_path / "out.json"
    results.write_atomic(p, {"s": summarize([1.0, 3.0])})
    assert json.loads(p.read_text())["s"]["mean"] == 2.0


def test_write_atomic_unserializable_leaves_old_file(tmp_path):
    p = tmp_path / "out.json"
    results.write_atomic(p, _minimal())
    with pytest.raises(TypeError, match="not JSON serializable: object"):
        results.write_atomic(p, {"x": object()})
    assert json.loads(p.read_text()) == _minimal()
    assert os.listdir(tmp_path) == ["out.json"]


def test_write_atomic_missing_directory_is_output_error(tmp_path):
    with pytest.raises(OutputError) as ei:
        results.write_atomic(tmp_path / "no" / "such" / "out.json", _minimal())
    assert ei.value.exit_code == 5


def test_write_atomic_failure_leaves_no_temp_file(tmp_path):
    target = tmp_path / "out.json"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(OutputError):
        results.write_atomic(target, _minimal())
    assert sorted(os.listdir(tmp_path)) == ["out.json"]


def test_write_atomic_respects_umask(tmp_path):
    old = os.umask(0o022)
    try:
        p = tmp_path / "out.json"
        results.write_atomic(p, _minimal())
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


# --- check_writable -----------------------------------------------------------------------

def test_check_writable_ok_and_leaves_nothing(tmp_path):
    files.check_writable(tmp_path / "out.json")
    assert os.listdir(tmp_path) == []


def test_check_writable_refuses_missing_parents(tmp_path):  # issue 11: never creates directories asked for
    with pytest.raises(OutputError, match="does not exist") as ei:
        files.check_writable(tmp_path / "a" / "b" / "out.json")
    assert ei.value.exit_code == 5
    assert os.listdir(tmp_path) == []
    files.check_writable(tmp_path / "a" / "b" / "out.json", create_parent=True)  # encbench's own default dir
    assert os.listdir(tmp_path / "a" / "b") == []


def test_check_writable_directory(tmp_path):
    with pytest.raises(OutputError, match="is a directory") as ei:
        files.check_writable(tmp_path)
    assert ei.value.exit_code == 5
    assert "-o" in ei.value.hint


def test_check_writable_unwritable_dir():
    with pytest.raises(OutputError) as ei:
        files.check_writable(Path("/proc/x.json"))
    assert ei.value.exit_code == 5
    assert "/proc/x.json" in str(ei.value)


def test_check_writable_parent_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(OutputError):
        files.check_writable(f / "out.json")


# --- errors -------------------------------------------------------------------------------

ALL_ERRORS = [c for c in vars(errors).values()
              if isinstance(c, type) and issubclass(c, EncbenchError)]


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda c: c.__name__)
def test_errors_pickle_with_hint(cls):
    e = cls("something went wrong", hint="do this instead")
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is cls
    assert str(e2) == "something went wrong"
    assert e2.hint == "do this instead"
    assert e2.exit_code == cls.exit_code
    assert e2.one_line() == "something went wrong (do this instead)"


def test_real_errors_pickle():
    for e in (ResultFileError("result file x is not valid JSON", hint="re-run the benchmark"),
              SchemaVersionError("v99", hint="upgrade"), UnknownNameError("nope", hint="valid: a, b")):
        e2 = pickle.loads(pickle.dumps(e))
        assert (type(e2), str(e2), e2.hint, e2.exit_code) == (type(e), str(e), e.hint, e.exit_code)


def test_one_line_without_hint_and_multiline():
    assert EncbenchError("a\nb ").one_line() == "a b"
    assert OutputError("x").hint == ""


def test_exit_codes_distinct_and_documented():
    codes = [c.exit_code for c in ALL_ERRORS]
    assert len(codes) == len(set(codes))
    for c in codes:
        assert c in errors.EXIT_CODES
    assert {OutputError.exit_code, ResultFileError.exit_code, SchemaVersionError.exit_code} == {5, 6, 7}
