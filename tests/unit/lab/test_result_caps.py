"""What one result file may hold (issue 28 item 7, docs/RESULTS.md): a file just over a cap is refused in one line
(exit 6) before the slow part of loading; a file at the caps loads. A valid 297 MB file once kept `show` busy past
120 s at 1.26 GB; a 1 MB command line took 70 s (shlex, quadratic)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from encbench.errors import ResultFileError
from encbench.lab import results, resultschema

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")
GOLDEN = TESTS / "golden" / "results-v1.json"


def _with_runs(n: int) -> dict:
    doc = json.loads(GOLDEN.read_text())
    doc["runs"] = [{"workload": "scan-like", "variant": {}, "variant_label": "v", "operations": []}] * n
    return doc


def _write(tmp_path: Path, doc: dict, name: str = "r.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_the_caps_are_what_the_docs_state():
    text = (TESTS.parent / "docs" / "RESULTS.md").read_text()
    for figure in (f"{resultschema.MAX_RUNS:,}", f"{results.MAX_BYTES // 2**20} MiB",
                   f"{resultschema.MAX_STRING // 2**20} MiB", f"{resultschema.MAX_COMMAND // 2**10} KiB"):
        assert figure in text, figure


def test_a_file_at_the_runs_cap_loads_and_one_over_is_refused_quickly(tmp_path):
    assert len(results.load(_write(tmp_path, _with_runs(resultschema.MAX_RUNS)))["runs"]) == resultschema.MAX_RUNS
    start = time.monotonic()
    with pytest.raises(ResultFileError) as e:
        results.load(_write(tmp_path, _with_runs(resultschema.MAX_RUNS + 1)))
    assert time.monotonic() - start < 20  # the count is checked before any run is
    assert f"runs has {resultschema.MAX_RUNS + 1:,} items, more than the {resultschema.MAX_RUNS:,}" in e.value.one_line()


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(results.MAX_BYTES + 1)  # sparse: nothing written
    start = time.monotonic()
    with pytest.raises(ResultFileError, match="larger than"):
        results.load(path)
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("where", ["notes", "error", "extra"])
def test_a_string_over_the_cap_is_refused_and_one_at_it_loads(tmp_path, where):
    def doc_with(length: int) -> dict:
        doc = json.loads(GOLDEN.read_text())
        text = 'a"\\[' + "x" * (length - 4)  # escapes count as the characters they stand for, or more
        if where == "extra":
            doc["runs"][0]["operations"][0].setdefault("extra", {})["note"] = text
        else:
            doc[where] = [text] if where == "notes" else text
        return doc

    results.load(_write(tmp_path, doc_with(resultschema.MAX_STRING - 8)))
    with pytest.raises(ResultFileError) as e:
        results.load(_write(tmp_path, doc_with(resultschema.MAX_STRING + 8)))
    assert f"holds a string of more than {resultschema.MAX_STRING:,} characters" in e.value.one_line()


def test_a_command_line_over_its_cap_is_refused(tmp_path):
    doc = json.loads(GOLDEN.read_text())
    doc["config"]["command"] = "encbench run " + "x" * resultschema.MAX_COMMAND
    start = time.monotonic()
    with pytest.raises(ResultFileError, match="config.command is .* characters long"):
        results.load(_write(tmp_path, doc))
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("text,deep", [
    ('{"a": "' + "[" * 100 + '"}', False),  # brackets in a string are text
    ('{"a": "\\\\", "b": ' + "[" * 63 + "]" * 63 + "}", False),  # an escaped backslash ends no string early
    ('{"a": "\\"[[[", "b": ' + "[" * 64 + "]" * 64 + "}", True),
    ("[" * 64 + "]" * 64, False),
    ("[" * 65 + "]" * 65, True),
    ("[" * 70 + "}" * 70, False),  # not JSON: json.loads says where
])
def test_the_nesting_prescan_reads_strings_and_escapes(text, deep):
    assert resultschema.nesting_depth_exceeds(text) is deep
    assert (resultschema.prescan(text) is not None) is deep
