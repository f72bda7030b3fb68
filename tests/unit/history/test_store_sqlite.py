"""The SQLite history store: migrations, a newer schema refused, one transaction per run, no password stored."""

from __future__ import annotations

import sqlite3

import pytest

from encbench import errors
from encbench.history import Entry, Store, parse_url, schema, trend
from encbench.history.record import leak_entry, scan_entry
from encbench.vocab.leakcheck import Finding, LeakReport

SECRET = "s3cr3t-Pa55word-xyz"


def _entry(**over) -> Entry:
    base = dict(kind="run", measured_at="2026-11-23T07:00:00Z", engine="postgres",
                target=f"postgresql://bench:{SECRET}@db1:5432/app", command=f"encbench run --dsn "
                f"'host=db1 password={SECRET}' --store postgresql://u:{SECRET}@h/x", status="complete", exit_code=0,
                figures=[{"workload": "storm", "operation": "messages", "variant": "tls=on", "baseline": "tls=off",
                          "metric": "wall_s", "ratio": 1.25, "ci_low": 1.2, "ci_high": 1.3, "verdict": "costs",
                          "n_baseline": 6, "n_contender": 6}])
    base.update(over)
    return Entry(**base)


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as c:
        return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _count(path, table: str) -> int:
    with sqlite3.connect(path) as c:
        return c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_a_new_store_runs_every_migration_once(tmp_path):
    path = tmp_path / "h.db"
    with Store.open(str(path)) as store:
        assert store.version() == schema.CURRENT
    assert {"schema_version", "runs", "figures", "scans", "findings"} <= _tables(path)
    with Store.open(str(path)) as store:  # opened again: nothing run twice (a second CREATE TABLE would fail)
        assert store.version() == schema.CURRENT
    assert _count(path, "schema_version") == len(schema.MIGRATIONS)
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


def test_an_older_store_is_migrated_forward(tmp_path, monkeypatch):
    """A store at version 1 gains the migrations a later encbench appends, in one step, its rows kept."""
    path = tmp_path / "h.db"
    with Store.open(str(path)) as store:
        store.record(_entry())
    extra = schema.Migration(schema.CURRENT + 1, "a column for a test", ("ALTER TABLE runs ADD COLUMN note TEXT",))
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS + (extra,))
    monkeypatch.setattr(schema, "CURRENT", extra.version)
    with Store.open(str(path)) as store:
        assert store.version() == extra.version
        assert len(store.runs()) == 1
    with sqlite3.connect(path) as c:
        assert "note" in [r[1] for r in c.execute("PRAGMA table_info(runs)")]


def test_a_store_of_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "h.db"
    Store.open(str(path)).close()
    with sqlite3.connect(path) as c:
        c.execute("INSERT INTO schema_version VALUES (?, 'from the future', '2030-01-01T00:00:00Z', '9.0')",
                  (schema.CURRENT + 1,))
    for create in (True, False):
        with pytest.raises(errors.StoreSchemaError) as e:
            Store.open(str(path), create=create)
        assert e.value.exit_code == 22
        assert f"schema version {schema.CURRENT + 1}" in e.value.one_line()
        assert "\n" not in e.value.one_line()


def test_a_database_that_is_not_a_store_is_not_written(tmp_path):
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(errors.StoreUnavailableError, match="not an encbench history store"):
        Store.open(str(path))
    assert _tables(path) == {"customers"}
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all, just text " * 100)
    with pytest.raises(errors.StoreUnavailableError) as e:
        Store.open(str(junk))
    assert e.value.exit_code == 21


def test_a_run_is_written_whole_or_not_at_all(tmp_path):
    """The second insert (the first figure, without a metric: NOT NULL) fails: the run row before it is rolled
    back, and so would be the rows after it."""
    path = tmp_path / "h.db"
    with Store.open(str(path)) as store:
        store.record(_entry())
        bad = _entry()
        bad.figures = [dict(bad.figures[0], metric=None), dict(bad.figures[0])]
        with pytest.raises(errors.StoreUnavailableError) as e:
            store.record(bad)
        assert "NOT NULL" in e.value.one_line() and "nothing of this run was stored" in e.value.one_line()
        assert [r["id"] for r in store.runs()] == [1]
    assert _count(path, "runs") == 1
    assert _count(path, "figures") == 1


def test_no_password_reaches_the_store_file(tmp_path):
    path = tmp_path / "h.db"
    report = LeakReport("mariadb", "binlog not encrypted", 48, scanned_files=3, scanned_bytes=100,
                        findings=[Finding("/var/lib/mysql/binlog.000001", "binary log", 2, "encrypt_binlog=ON")])
    scan = {"target": f"postgres://app:{SECRET}@db1:5432", "engine": "postgres", "protocols": ["TLSv1.3"],
            "suites": {"TLSv1.3": [{"suite": "TLS_AES_256_GCM_SHA384", "grade": "A"}]},
            "default": {"protocol": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384"}, "scanned_at": "2026-11-23T07:00:00Z"}
    with Store.open(str(path)) as store:
        store.record(_entry(environment={"note": f"password={SECRET}"}, summary={"dsn": f"mysql://r:{SECRET}@h/d"}))
        store.record(leak_entry(report, dsn=f"mysql://root:{SECRET}@127.0.0.1:3306/x",
                                command=f"encbench leak-check --dsn mysql://root:{SECRET}@127.0.0.1:3306/x",
                                exit_code=13))
        store.record(scan_entry([(scan, [])], command=f"encbench tls-scan PGPASSWORD={SECRET}"))
        targets = {r["kind"]: r["target"] for r in store.runs()}
    assert targets == {"run": "postgresql://bench:<hidden>@db1:5432/app",
                       "leak-check": "mysql://root:<hidden>@127.0.0.1:3306/x",
                       "tls-scan": "postgres://app:<hidden>@db1:5432"}
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the file, and a journal/WAL if one is left
    assert SECRET.encode() not in data
    assert b"<hidden>" in data


def test_the_trend_follows_one_figure_over_runs(tmp_path):
    path = tmp_path / "h.db"
    with Store.open(str(path)) as store:
        for day, ratio in (("21", 1.30), ("22", 1.25), ("23", 1.10)):
            store.record(_entry(measured_at=f"2026-11-{day}T07:00:00Z", figures=[
                dict(_entry().figures[0], ratio=ratio, ci_low=ratio - 0.05, ci_high=ratio + 0.05)]))
        store.record(_entry(target="postgres (private)"))
        found = trend.trend(store, "wall_s", workload="storm", target="db1")
        assert trend.trend(store, "cpu_s")["series"] == []
        with pytest.raises(errors.UnknownNameError):
            trend.trend(store, "no_such_metric")
    assert len(found["series"]) == 1
    points = found["series"][0]["points"]
    assert [p["value"] for p in points] == [1.30, 1.25, 1.10]
    assert [p["time"][:10] for p in points] == ["2026-11-21", "2026-11-22", "2026-11-23"]
    assert points[0]["ci"] == pytest.approx([1.25, 1.35])


def test_the_trend_of_several_workloads(tmp_path):
    """Issue 21 item 9: --workload takes a comma list everywhere; history's is the figures of any of them."""
    storm = _entry().figures[0]
    with Store.open(str(tmp_path / "h.db")) as store:
        store.record(_entry(figures=[storm, dict(storm, workload="bulk", operation="copy-out"),
                                     dict(storm, workload="connect", operation="connect")]))
        found = trend.trend(store, "wall_s", workload=["storm", "bulk"])
        assert trend.trend(store, "wall_s", workload=["bulk"])["series"][0]["workload"] == "bulk"
    assert sorted(s["workload"] for s in found["series"]) == ["bulk", "storm"]


def test_store_urls(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert parse_url(None).location == str(tmp_path / "xdg" / "encbench" / "history.db")
    assert parse_url("default").default
    assert parse_url("sqlite:///abs/h.db").location == "/abs/h.db"
    assert parse_url("sqlite:rel.db").location == "rel.db"
    assert parse_url("postgres://u:p@h/db").backend == "postgresql"
    assert parse_url("postgres://u:p@h/db").label == "postgres://u:<hidden>@h/db"
    with pytest.raises(errors.BadValueError):
        parse_url("mongodb://h/db")
    assert Store.open(None, create=False) is None  # reading creates nothing
    assert not (tmp_path / "xdg").exists()
    with Store.open(None) as store:  # writing creates the default directory
        assert store.runs() == []
    assert (tmp_path / "xdg" / "encbench" / "history.db").is_file()


def test_the_docs_name_the_store_exit_codes_and_tables():
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    results_md = (root / "docs" / "RESULTS.md").read_text()
    readme = (root / "docs" / "exit-codes.md").read_text()  # the README's exit code table, as a page of its own
    for e in (errors.StoreUnavailableError, errors.StoreSchemaError):
        assert f"| {e.exit_code} | `{e.__name__}` |" in results_md
        assert f"| {e.exit_code} |" in readme
        assert errors.EXIT_CODES[e.exit_code]
    for table in ("runs", "figures", "scans", "findings"):
        assert f"| `{table}` |" in results_md


def test_a_fleet_scan_is_one_run_with_a_row_per_scanned_target(tmp_path):
    def scan(target, grades):
        return {"target": target, "engine": "postgres", "protocols": ["TLSv1.2", "TLSv1.3"],
                "suites": {"TLSv1.2": [{"suite": f"S{i}", "grade": g} for i, g in enumerate(grades)]},
                "default": {"protocol": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384"},
                "scanned_at": "2026-11-23T07:00:00Z"}

    entry = scan_entry([(scan("postgres://db1:5432", "AAB"), ["note: first sight"]),
                        (scan("postgres://db2:5432", "AC"), ["TLSv1.2: suite S9 accepted now"])],
                       command="encbench tls-scan --targets fleet.txt", target="3 targets (fleet.txt)", exit_code=14,
                       failed=[{"target": "postgres://db3:5432", "error": "cannot reach it"}])
    with Store.open(str(tmp_path / "h.db")) as store:
        store.record(entry)
        (run,) = store.runs()
        rows = {r["target"]: r for r in store.scans()}
        found = trend.trend(store, "suites", target="db2")
    assert (run["target"], run["exit_code"], run["kind"]) == ("3 targets (fleet.txt)", 14, "tls-scan")
    assert '"failed": [{"error": "cannot reach it", "target": "postgres://db3:5432"}]' in run["summary"]
    assert {t: (r["suites_count"], r["weakest_grade"], r["drifted"]) for t, r in rows.items()} == {
        "postgres://db1:5432": (3, "B", 0), "postgres://db2:5432": (2, "C", 1)}  # a note is no drift
    (series,) = found["series"]
    assert series["points"][0]["value"] == 2 and "drift: 1 change(s)" in series["points"][0]["verdict"]


def test_reading_a_store_writes_nothing(tmp_path, monkeypatch):
    """Issue 28: a read-only command writes nothing: an empty file stays empty, an older store is read, not migrated."""
    empty = tmp_path / "empty.db"
    empty.touch()
    assert Store.open(str(empty), create=False) is None
    Store.preflight(parse_url(str(empty)))  # before a measuring command: read too
    assert empty.read_bytes() == b""
    path = tmp_path / "h.db"
    with Store.open(str(path)) as store:
        store.record(_entry())
    before = path.read_bytes()
    extra = schema.Migration(schema.CURRENT + 1, "a column for a test", ("ALTER TABLE runs ADD COLUMN note TEXT",))
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS + (extra,))
    monkeypatch.setattr(schema, "CURRENT", extra.version)
    with Store.open(str(path), create=False) as store:
        assert len(store.runs()) == 1 and store.version() == extra.version - 1
    assert path.read_bytes() == before and not (tmp_path / "h.db-journal").exists()


def test_history_on_an_empty_file_is_refused_in_one_line_and_the_file_left_empty(tmp_path, capsys):
    import signal

    from encbench.cli import app

    empty = tmp_path / "empty.db"
    empty.touch()
    try:
        for extra in ([], ["--json"], ["--kind", "run"]):
            assert app.main(["history", "--store", str(empty), *extra]) == 21
            err = capsys.readouterr().err.strip()
            assert "not an encbench history store" in err and "--store first" in err and "\n" not in err, err
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # cli.main installs its own
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert empty.read_bytes() == b""
