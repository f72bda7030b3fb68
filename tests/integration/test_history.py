"""History in a real database (issue 17 item 3): `--store URL` on run, tls-scan and leak-check, and
`encbench history`, against a SQLite file and a real PostgreSQL server (started by the test)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from integration_helpers import assert_one_line_error, external_pg

RUN = ("run", "--quick", "--size", "2MB", "--workload", "scan-eq", "--variant", "cache=warm", "--runs", "2",
       "--warmups", "0")


def _run(encbench, data_dir, out, store: str, *extra: str):
    res = encbench(*RUN, "--data-dir", str(data_dir), "-o", str(out), "--store", store, *extra)
    assert res.returncode == 0, str(res)
    assert "recorded in the history store" in res.stderr, str(res)
    return res


def _history(encbench, store: str, *args: str) -> dict:
    res = encbench("history", "--store", store, "--json", *args)
    assert res.returncode == 0, str(res)
    return json.loads(res.stdout)


def _analysis(path):
    from encbench.analysis.summary import Analysis

    return Analysis.from_doc(json.loads(path.read_text()))


def _check_two_runs_and_a_trend(doc: dict, files: list) -> None:
    runs = [r for r in doc["runs"] if r["kind"] == "run"]
    assert len(runs) == 2, doc
    assert [r["result_file"] for r in runs] == [str(f) for f in files]
    assert all(r["engine"] == "sqlite" and r["target"] == "sqlite (private)" and r["exit_code"] == 0 for r in runs)
    assert runs[0]["environment"]["engine_versions"]["sqlcipher"]
    series = doc["trend"]["series"]
    assert series and all(s["workload"] == "scan-eq" for s in series)
    for s in series:  # one point per run, oldest first, each the ratio and CI the result file holds
        assert [p["run_id"] for p in s["points"]] == [r["id"] for r in runs]
    for path, run in zip(files, runs):
        result = json.loads(path.read_text())
        stored = {(c["contender"], c["baseline"]): c for c in result["comparisons"]
                  if c["metric"] == "wall_s" and c["workload"] == "scan-eq"}
        for s in series:
            point = next(p for p in s["points"] if p["run_id"] == run["id"])
            c = stored[(s["variant"], s["baseline"])]
            assert point["value"] == pytest.approx(c["ratio"], rel=1e-12)
            assert point["ci"] == pytest.approx(c["ci"], rel=1e-12) and point["verdict"] == c["verdict"]


@pytest.fixture(scope="module")
def sqlite_runs(encbench, data_dir, tmp_path_factory):
    """Two tiny real runs recorded in a SQLite store: (store, result files)."""
    tmp = tmp_path_factory.mktemp("history")
    store = str(tmp / "history.db")
    files = [tmp / "r1.json", tmp / "r2.json"]
    for f in files:
        _run(encbench, data_dir, f, store)
    return store, files


def test_sqlite_store_two_runs_then_the_trend(encbench, sqlite_runs, tmp_path):
    store, files = sqlite_runs
    doc = _history(encbench, store, "--workload", "scan-eq", "--metric", "wall_s")
    assert doc["schema_version"] == 1
    _check_two_runs_and_a_trend(doc, files)
    page = tmp_path / "history.html"
    text = encbench("history", "--store", store, "--workload", "scan-eq", "--html", str(page))
    assert text.returncode == 0 and "trend of wall_s" in text.stdout and "scan-eq/scan" in text.stdout, str(text)
    html = page.read_text()  # the trend plotted (one line per series, the CIs as bars) and both runs listed
    assert "Trend of wall_s" in html and html.count("<svg") == 1
    assert all(f"<tr><td>{r['id']}</td>" in html for r in doc["runs"])


def test_default_store_follows_xdg_data_home(encbench, tmp_path):
    xdg = tmp_path / "xdg"
    env = {"XDG_DATA_HOME": str(xdg)}
    empty = encbench("history", env=env)
    assert empty.returncode == 0 and "no history yet" in empty.stdout, str(empty)
    assert not xdg.exists()  # reading creates nothing
    res = encbench("leak-check", "--store", "default", env=env)
    assert res.returncode == 0, str(res)
    assert (xdg / "encbench" / "history.db").is_file()
    found = json.loads(encbench("history", "--json", "--metric", "findings", env=env).stdout)
    assert [r["kind"] for r in found["runs"]] == ["leak-check"]  # its findings are a figure too
    assert found["runs"][0]["command"] == "encbench leak-check --store default"
    assert [p["value"] for s in found["trend"]["series"] for p in s["points"]] == [0]


def test_postgresql_store(encbench, data_dir, sqlite_runs, tmp_path):
    with external_pg() as server:
        info = server.conninfo()
        url = f"postgresql://{info['user']}:{info['password']}@127.0.0.1:{info['port']}/{info['dbname']}"
        # an earlier run's result file recorded afterwards (as after an unreachable store), then a run with --store
        files = [sqlite_runs[1][0], tmp_path / "p1.json"]
        rec = encbench("history", "--store", url, "--record", str(files[0]), "--kind", "run")
        _run(encbench, data_dir, files[1], url)
        assert rec.returncode == 0 and info["password"] not in rec.stdout + rec.stderr, str(rec)
        doc = _history(encbench, url, "--workload", "scan-eq", "--target", "private")
        _check_two_runs_and_a_trend(doc, files)
        assert info["password"] not in json.dumps(doc)
        assert doc["store"] == url.replace(info["password"], "<hidden>")
        import psycopg

        with psycopg.connect(**info) as conn:  # the tables live in their own schema; no password in any row
            tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'encbench'")}
            assert {"schema_version", "runs", "figures", "scans", "findings"} <= tables
            rows = conn.execute("SELECT r::text FROM encbench.runs r ORDER BY id").fetchall()
            assert len(rows) == 2 and all(info["password"] not in r[0] for r in rows)
            assert "postgresql://postgres:<hidden>@127.0.0.1" in rows[1][0]  # the command, redacted
            assert conn.execute("SELECT COUNT(*) FROM encbench.figures").fetchone()[0] > 0
        # a tls-scan of the same server, recorded there too: the accepted suites are a figure
        scan = encbench("tls-scan", f"postgresql://127.0.0.1:{info['port']}", "--json", "--store", url)
        assert scan.returncode == 0, str(scan)
        suites = _history(encbench, url, "--metric", "suites", "--kind", "tls-scan")
        assert [r["kind"] for r in suites["runs"]] == ["tls-scan"]
        (series,) = suites["trend"]["series"]
        assert series["target"] == f"postgres://127.0.0.1:{info['port']}"
        accepted = json.loads(scan.stdout)["suites"]
        assert [p["value"] for p in series["points"]] == [sum(len(v) for v in accepted.values())]
        # one transaction per run on PostgreSQL too: the second insert fails, nothing of that run stays
        from encbench import errors
        from encbench.history import Store, run_entry

        with Store.open(url) as store:
            before = len(store.runs(limit=1000))
            bad = run_entry(json.loads(files[1].read_text()), _analysis(files[1]))
            bad.figures[0]["metric"] = None
            with pytest.raises(errors.StoreUnavailableError):
                store.record(bad)
            assert len(store.runs(limit=1000)) == before
        with psycopg.connect(**info) as conn:
            conn.execute("INSERT INTO encbench.schema_version VALUES (99, 'future', 'now', '9.0')")
        newer = encbench("history", "--store", url)
        line = assert_one_line_error(newer, 22)
        assert "schema version 99" in line and info["password"] not in line


def test_an_unreachable_store_keeps_the_result_file(encbench, data_dir, tmp_path):
    out = tmp_path / "kept.json"
    url = "postgresql://bench:hunter2-secret@127.0.0.1:1/db"
    res = encbench(*RUN, "--data-dir", str(data_dir), "-o", str(out), "--store", url)
    assert res.returncode == 21 and "Traceback" not in res.stdout + res.stderr, str(res)
    written, line = res.stderr.splitlines()  # the run's own line, then the one-line error
    assert written.startswith("results written to") and line.startswith("encbench: error: cannot open history store")
    assert f"encbench history --record {out}" in line
    assert "hunter2-secret" not in res.stdout + res.stderr
    assert json.loads(out.read_text())["status"] == "complete"  # written before the store was tried
    bad = encbench(*RUN, "--data-dir", str(data_dir), "-o", str(tmp_path / "never.json"), "--store", "mongodb://x/y")
    assert_one_line_error(bad, 4)  # a malformed URL: refused before anything is measured
    assert not (tmp_path / "never.json").exists()


def test_a_newer_sqlite_store_is_refused(encbench, tmp_path):
    path = tmp_path / "h.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT, applied_at TEXT, "
                  "encbench_version TEXT)")
        c.execute("INSERT INTO schema_version VALUES (7, 'future', 'now', '9.0')")
    line = assert_one_line_error(encbench("history", "--store", str(path)), 22)
    assert "schema version 7" in line and "upgrade encbench" in line
    res = encbench("leak-check", "--store", str(path))
    assert_one_line_error(res, 22)
    assert res.stdout == ""  # refused before anything was checked
