"""`encbench tls-scan --targets FILE` against real PostgreSQL servers the test starts (as a DBA's would be):
one unreachable target among them, drift of one server across a fleet (--baseline-dir), JSON Lines, the
Prometheus textfile parsed back, a target that accepts TCP and never answers, and bad targets files."""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from integration_helpers import assert_one_line_error, external_pg

pytestmark = pytest.mark.integration

SUITES = "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-SHA256:ECDHE-RSA-CHACHA20-POLY1305"


def _set_ciphers(server, value: str) -> None:
    """ALTER SYSTEM + reload, as a DBA changes a running server; waits until new connections see it."""
    import psycopg

    with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
        c.execute(f"ALTER SYSTEM SET ssl_ciphers = '{value}'")
        c.execute("SELECT pg_reload_conf()")
    for _ in range(100):
        with psycopg.connect(**server.conninfo(), sslmode="disable") as c:
            if c.execute("SHOW ssl_ciphers").fetchone()[0] == value:
                return
        time.sleep(0.05)
    raise AssertionError("the server did not take the new ssl_ciphers")


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def _silent_listener():
    """Accepts TCP connections and never says a word."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held = []

    def loop():
        while True:
            try:
                held.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=loop, daemon=True).start()
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()
        for c in held:
            c.close()


def _samples(text: str) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _jsonl(path) -> dict:
    return {row["target"]: row for row in map(json.loads, path.read_text().splitlines())}


def test_a_fleet_with_an_unreachable_target_and_drift_on_one_server(encbench, tmp_path):
    with external_pg() as a, external_pg() as b:
        _set_ciphers(b, SUITES)
        dead = _closed_port()
        targets = tmp_path / "fleet.txt"
        targets.write_text(f"# three servers\npostgresql://bench:secret-pw@127.0.0.1:{a.port}/postgres\n\n"
                           f"127.0.0.1:{b.port}/postgres   # b\n127.0.0.1:{dead}/postgres\n")
        bdir, jsonl, prom = tmp_path / "baselines", tmp_path / "scan.jsonl", tmp_path / "encbench.prom"
        args = ("tls-scan", "--targets", str(targets), "--jobs", "3", "--baseline-dir", str(bdir),
                "--jsonl", str(jsonl), "--prometheus", str(prom))
        first = encbench(*args)
        assert first.returncode == 10, str(first)  # the unreachable one: the scan of the others went on
        la, lb, ld = (f"postgres://127.0.0.1:{p}" for p in (a.port, b.port, dead))
        rows = _jsonl(jsonl)
        assert [rows[t]["exit_code"] for t in (la, lb, ld)] == [0, 0, 10]
        assert rows[lb]["status"] == "new-baseline" and rows[ld]["status"] == "error"
        assert "cannot reach" in rows[ld]["error"]
        assert rows[lb]["protocols"] == ["TLSv1.2", "TLSv1.3"] and rows[lb]["suites_accepted"] == 3 + 3  # 1.2 + 1.3
        assert rows[lb]["weakest_grade"] == "B"  # ECDHE-RSA-AES128-SHA256: CBC
        assert len(list(bdir.iterdir())) == 2  # a baseline per scanned target, none for the unreachable one
        assert "secret-pw" not in jsonl.read_text() + first.stdout + first.stderr + prom.read_text()
        assert "".join(p.read_text() for p in bdir.iterdir()).count("secret-pw") == 0
        table = first.stdout.splitlines()
        assert table[0].split() == ["target", "protocols", "suites", "weakest", "drift"]
        assert any(line.startswith(lb) and line.rstrip().endswith("new baseline") for line in table)
        assert any(line.startswith(ld) and "ERROR (exit 10)" in line for line in table)

        _set_ciphers(b, SUITES.replace(":ECDHE-RSA-AES128-SHA256", ""))  # one server of the fleet changes
        second = encbench(*args, "--format", "jsonl")
        assert second.returncode == 14, str(second)  # drift wins over the unreachable target
        rows = {r["target"]: r for r in map(json.loads, second.stdout.splitlines())}
        assert rows == _jsonl(jsonl)  # --format jsonl prints what --jsonl writes
        assert [rows[t]["exit_code"] for t in (la, lb, ld)] == [0, 14, 10]
        assert rows[la]["status"] == "ok" and rows[la]["drift"] == []
        assert rows[lb]["drift"] == ["TLSv1.2: suite removed: ECDHE-RSA-AES128-SHA256"]
        assert rows[lb]["weakest_grade"] == "A"
        s = _samples(prom.read_text())
        assert s[("encbench_tls_drift", (("target", lb),))] == 1
        assert s[("encbench_tls_drift", (("target", la),))] == 0
        assert s[("encbench_tls_scan_success", (("target", ld),))] == 0
        assert s[("encbench_tls_scan_exit_code", (("target", lb),))] == 14
        assert s[("encbench_tls_suites_accepted", (("target", lb),))] == 5
        assert s[("encbench_tls_weakest_grade", (("target", lb),))] == 1  # A
        assert s[("encbench_tls_protocol_accepted", (("protocol", "TLSv1.1"), ("target", la)))] == 0
        assert s[("encbench_tls_protocol_accepted", (("protocol", "TLSv1.3"), ("target", la)))] == 1
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left

        third = encbench(*args, "--update-baselines")  # accept the change: the fleet is quiet again
        assert third.returncode == 14, str(third)
        fourth = encbench(*args)
        assert fourth.returncode == 10 and "DRIFT" not in fourth.stdout, str(fourth)


def test_a_target_that_never_answers_is_bounded_by_the_timeout(encbench, tmp_path):
    with _silent_listener() as port:
        targets = tmp_path / "t.txt"
        targets.write_text(f"127.0.0.1:{port}/postgres\n127.0.0.1:{_closed_port()}/mysql\n")
        start = time.monotonic()
        res = encbench("tls-scan", "--targets", str(targets), "--timeout", "2", "--format", "jsonl")
        took = time.monotonic() - start
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["exit_code"] for r in rows] == [16, 10]  # no protocol answer / unreachable
    assert res.returncode == 10, str(res)  # the failures differ: 10, what they have in common
    assert "no postgres protocol answer within 2 s" in rows[0]["error"]
    assert rows[0]["seconds"] < 4 and took < 15


def test_bad_targets_files(encbench, tmp_path):
    t = tmp_path / "t.txt"
    closed = f"127.0.0.1:{_closed_port()}/postgres"  # scanned, and refused at once (10)
    cases = [(f"{closed}\n\nnot-a-target\n", 10, "line 3"),
             (f"{closed}\npostgresql://u:pw@[::1\nmysql://db1:0\n", 10, "line 2: target 'postgresql://u:<hidden>@[::1'"),
             ("db1:5432/oracle\n", 3, "unknown engine 'oracle'"),
             (f"{closed}\n# same server\npostgresql://u:pw@{closed.split('/')[0]}/x\n", 10, "line 3: postgres://127.0.0.1")]
    for text, code, words in cases:  # a line that names no target is that line's failure; the others are scanned
        t.write_text(text)
        res = encbench("tls-scan", "--targets", str(t), "--format", "jsonl")
        rows = [json.loads(line) for line in res.stdout.splitlines()]
        assert res.returncode == code and len(rows) == len([x for x in text.splitlines() if x and x[0] != "#"]), res
        assert any(words in (r["error"] or "") for r in rows) and "pw@" not in res.stdout, res.stdout
        assert {r["exit_code"] for r in rows if r["engine"] is None} <= {3, 4} and not res.stderr.strip(), res
    t.write_text("# only comments\n\n")
    assert "names no target" in assert_one_line_error(encbench("tls-scan", "--targets", str(t)), 2)
    assert_one_line_error(encbench("tls-scan", "--targets", str(tmp_path / "none.txt")), 6)
    t.write_text("db1:5432\n")  # options that take one target, and unwritable outputs: checked before any scan
    assert_one_line_error(encbench("tls-scan", "--targets", str(t), "--baseline", str(t)), 2)
    assert_one_line_error(encbench("tls-scan", "--targets", str(t), "--prometheus", str(tmp_path / "no/x.prom")), 5)


def test_leak_check_and_run_write_prometheus_files(encbench, tmp_path, data_dir):
    leak = tmp_path / "leak.prom"
    res = encbench("leak-check", "--prometheus", str(leak))  # SQLCipher: a private database, nothing leaks
    assert res.returncode == 0, str(res)
    s = _samples(leak.read_text())
    assert s[("encbench_leak_findings", (("engine", "sqlite"), ("target", "private")))] == 0
    assert s[("encbench_leak_scanned_files", (("engine", "sqlite"), ("target", "private")))] >= 1

    run, out = tmp_path / "run.prom", tmp_path / "r.json"
    res = encbench("run", "--size", "1MB", "--runs", "2", "--warmups", "0", "--workload", "scan-eq",
                   "--variant", "cache=warm", "--data-dir", str(data_dir), "-o", str(out), "--prometheus", str(run))
    assert res.returncode == 0, str(res)
    from encbench.analysis.summary import Analysis

    expected = {(c["workload"], c["operation"], c["metric"], c["contender"]): c["ratio"]
                for c in Analysis.from_doc(json.loads(out.read_text())).comparisons
                if not c.get("placebo") and c["ratio"] is not None and math.isfinite(c["ratio"])}
    got = {(x.labels["workload"], x.labels["operation"], x.labels["metric"], x.labels["variant"]): x.value
           for fam in text_string_to_metric_families(run.read_text()) if fam.name == "encbench_overhead_ratio"
           for x in fam.samples}
    assert got and got == pytest.approx(expected)  # every comparison of the result file, its ratio
    res = encbench("leak-check", "--prometheus", str(tmp_path / "leak.txt"))
    assert "*.prom" in assert_one_line_error(res, 4)
