"""`encbench run --workload column` end to end on SQLite (issue 16): every operation of every method, the
lookup's index use read from SQLite's plan, the raw cipher reference, and no key bytes in any output."""

from __future__ import annotations

import base64
import json

import pytest

from encbench.workloads import column

pytestmark = pytest.mark.integration

METHODS = ("none", "client-gcm", "client-siv")
OPERATIONS = ["insert", "read", "lookup", "update"]
PASSPHRASE = "column-lab passphrase 7f3c"
SMALL = ("--param", "column_rows=400", "--param", "lookups=3")


@pytest.fixture(scope="module")
def column_run(encbench, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("column")
    key_file = tmp / "key"
    key_file.write_text(PASSPHRASE + "\n")
    out = tmp / "column.json"
    res = encbench("run", "--workload", "column", "--variant", "method=" + ",".join(METHODS), "--runs", "2",
                   "--warmups", "0", *SMALL, "--key-file", str(key_file), "--data-dir", str(tmp / "data"),
                   "-o", str(out))
    assert res.returncode == 0, str(res)
    return res, out.read_text(), json.loads(out.read_text())


def test_every_method_ran_every_operation_and_was_compared_with_none(column_run):
    res, _, doc = column_run
    assert doc["status"] == "complete"
    runs = [r for r in doc["runs"] if r["workload"] == "column"]
    assert sorted(r["variant"]["method"] for r in runs) == sorted(METHODS * 2)
    for run in runs:
        assert [op["operation"] for op in run["operations"]] == OPERATIONS
        for op in run["operations"]:
            assert op["metrics"]["wall_s"] > 0 and op["metrics"]["cpu_s"] >= 0
    compared = {(c["operation"], c["contender"]) for c in doc["comparisons"] if c["metric"] == "cpu_s"}
    assert compared == {(op, f"method={m}") for op in OPERATIONS for m in METHODS[1:]}
    assert all(c["baseline"] == "method=none" for c in doc["comparisons"])
    assert "Column encryption" in res.stdout and "method=client-siv" in res.stdout


def test_the_lookup_used_the_index_for_none_and_siv_only(column_run):
    _, _, doc = column_run
    for run in doc["runs"]:
        ops = {op["operation"]: op["extra"] for op in run["operations"]}
        searchable = run["variant"]["method"] != "client-gcm"
        assert ops["lookup"]["index_used"] == int(searchable), ops["lookup"]["plan"]
        assert ops["lookup"]["rows_examined_per_lookup"] == (1 if searchable else 400)
        assert ops["read"]["read_back_equal"] == 1
        expansion = column.CLIENT_METHODS[run["variant"]["method"]].overhead_bytes
        assert ops["insert"]["value_bytes_per_row"] == column.VALUE_BYTES + expansion


def test_per_row_figures_and_the_raw_cipher_reference(column_run):
    _, _, doc = column_run
    per_row = {s["variant"] for s in doc["summaries"] if s["metric"] == "cpu_us_per_row" and s["operation"] == "read"}
    assert per_row == {f"method={m}" for m in METHODS}
    assert any(s["metric"] == "cpu_us_per_query" and s["operation"] == "lookup" for s in doc["summaries"])
    raw = doc["calibration"]["raw_column_cipher"]
    assert set(raw) == {"aes-256-gcm", "aes-256-siv"}
    assert all(r["encrypt"]["us_per_call"] > 0 and r["decrypt"]["us_per_call"] > 0 for r in raw.values())
    assert "key_source" in doc["dataset"]["column"] and "_column_key" not in json.dumps(doc)


def test_no_key_bytes_in_the_result_file_or_the_output(column_run):
    res, text, _ = column_run
    material = column.column_key_material(PASSPHRASE)[0]
    secrets = [PASSPHRASE, material.hex(), base64.b64encode(material).decode()]
    secrets += [column._hkdf(material, m, n).hex() for m, n in (("client-gcm", 32), ("client-siv", 64))]
    for secret in secrets:
        for where, body in (("result file", text), ("stdout", res.stdout), ("stderr", res.stderr)):
            assert secret.lower() not in body.lower(), f"key material in the {where}"


def test_method_is_the_cli_shorthand_and_picks_the_workload(encbench, tmp_path):
    out = tmp_path / "m.json"
    res = encbench("run", "--method", "client-siv", "--runs", "1", "--warmups", "0", *SMALL,
                   "--data-dir", str(tmp_path / "data"), "-o", str(out))
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    assert {r["workload"] for r in doc["runs"]} == {"column"}
    assert {r["variant_label"] for r in doc["runs"]} == {"method=client-siv"}
    assert "generated" in doc["dataset"]["column"]["key_source"]
    left = [p.name for p in (tmp_path / "data").iterdir() if p.name.startswith(("sqlite-", "scratch-"))]
    assert left == [], "a column-only run leaves no data files and no scratch behind"
    bad = encbench("run", "--method", "pgp", "--runs", "1", "--data-dir", str(tmp_path / "data"))
    assert bad.returncode == 3 and "Traceback" not in bad.stderr and "client-gcm" in bad.stderr
