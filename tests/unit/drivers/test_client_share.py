"""The saturated-client rule: a client busy >= 90% of the wall time gets no verdict (drivers/client_share.py)."""

from __future__ import annotations

import os

import pytest

from encbench.analysis import summary as analysis
from encbench.engines import base as engine_base
from encbench.lab import worker
from encbench.drivers import client_share
from encbench.probes import Target
from encbench.workloads.base import Operation


def test_share_and_flag():
    assert client_share.share_extra({"client_cpu_s": 0.95, "wall_s": 1.0}) == {"client_share": 0.95,
                                                                              "client_saturated": 1}
    assert client_share.share_extra({"client_cpu_s": 0.5, "wall_s": 1.0})["client_saturated"] == 0
    assert client_share.share_extra({"client_cpu_s": 0.9, "wall_s": 1.0})["client_saturated"] == 1  # the limit
    assert client_share.share_extra({"wall_s": 1.0}) == {}  # client CPU not measured: nothing claimed
    assert client_share.share_extra({"client_cpu_s": 1.5, "wall_s": 1.0}, client_cores=2)["client_saturated"] == 0
    assert client_share.share_extra({"client_cpu_s": 1.9, "wall_s": 1.0}, client_cores=2)["client_saturated"] == 1


def _doc(share_off: list[float], share_on: list[float]) -> dict:
    """Fabricated storm runs, 6 per side: TLS 2x slower, with the given client shares."""
    runs = []
    for tls, shares, wall in (("off", share_off, 1.0), ("on", share_on, 2.0)):
        for i, s in enumerate(shares):
            w = wall * (1 + 0.01 * i)
            metrics = {"wall_s": w, "cpu_s": 0.5 * w, "client_cpu_s": s * w}
            runs.append({"workload": "storm", "variant": {"tls": tls}, "variant_label": f"tls={tls}", "warmup": False,
                         "operations": [{"operation": "messages", "metrics": metrics,
                                         "extra": {"messages": 1000, **client_share.share_extra(metrics)}}]})
    return {"runs": runs, "environment": {"cpu": {"logical_cores": 2}},
            "engine": {"name": "postgres", "axis": "tls", "axis_baseline": "off",
                       "variants": [{"tls": "off"}, {"tls": "on"}],
                       "variant_keys": [{"name": "tls", "applies_when": []}]}}


def _storm_comps(doc: dict) -> list[dict]:
    return [c for c in analysis.analyze(doc)["comparisons"] if c["workload"] == "storm"]


def test_saturated_client_gets_no_verdict():
    doc = _doc([0.5] * 6, [0.5, 0.5, 0.97, 0.5, 0.5, 0.5])  # one contender run saturated
    comps = _storm_comps(doc)
    assert comps and all("withheld" in c for c in comps)
    verdict = analysis.row_verdict(comps)
    assert verdict.startswith("no verdict: the client is saturated"), verdict
    assert "contender 1 of 6 runs" in verdict and "97%" in verdict
    assert "baseline" not in verdict


def test_client_below_the_limit_keeps_its_verdict():
    doc = _doc([0.5] * 6, [0.6] * 6)
    comps = _storm_comps(doc)
    assert comps and not any("withheld" in c for c in comps)
    assert not analysis.row_verdict(comps).startswith("no verdict")
    wall = next(c for c in comps if c["metric"] == "wall_s")
    assert wall["ratio"] == pytest.approx(2.0)


def test_worker_stores_what_the_check_reads():
    class Session(engine_base.Session):
        def target(self):
            return Target(pids=[os.getpid()], client=True)

    op = Operation("busy", run=lambda: {"n": sum(range(300_000))}, check=client_share.share_extra)
    out = worker._measure(op, Session(), {}, ["wall", "cpu"])
    m, e = out["metrics"], out["extra"]
    assert e["client_share"] == pytest.approx(m["client_cpu_s"] / m["wall_s"])
    assert e["client_saturated"] in (0, 1)


def test_notes_say_whether_the_client_set_the_pace():
    calm = analysis.analyze(_doc([0.5] * 6, [0.6] * 6))["notes"]
    assert any(n.startswith("the client is not the bottleneck") and "storm/messages 60%" in n for n in calm), calm
    busy = analysis.analyze(_doc([0.5] * 6, [0.5, 0.5, 0.97, 0.5, 0.5, 0.5]))["notes"]
    assert any(n.startswith("the client was saturated") and "storm/messages tls=on" in n for n in busy), busy


def test_native_storm_driver_is_built_once_into_the_cache(tmp_path, monkeypatch):
    from encbench.engines.postgres import storm as pg_storm

    if pg_storm.unavailable_reason():
        pytest.skip(pg_storm.unavailable_reason())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    binary, why = pg_storm.build()
    assert why == "" and binary.parent == tmp_path / "encbench" / "drivers" and os.access(binary, os.X_OK)
    mtime = binary.stat().st_mtime_ns
    assert pg_storm.build() == (binary, "") and binary.stat().st_mtime_ns == mtime  # cached, not rebuilt
    assert sorted(p.name for p in binary.parent.iterdir()) == [binary.name]  # no source or temp file left


def test_without_a_compiler_the_python_client_drives_the_storm(monkeypatch):
    from encbench.engines.postgres import storm as pg_storm

    monkeypatch.setattr(pg_storm.shutil, "which", lambda name: None)
    monkeypatch.setattr(pg_storm, "cache_dir", lambda: __import__("pathlib").Path("/nonexistent"))
    assert pg_storm.unavailable_reason() == "no C compiler"
    assert pg_storm.build() == (None, "no C compiler")
    assert pg_storm.session_storm(object(), 10, True) is None


def test_mariadb_client_command_line_mirrors_the_pymysql_arguments():
    from encbench.engines.mariadb import storm as maria_storm

    tcp = maria_storm.NativeStorm("/usr/bin/mariadb", {"host": "127.0.0.1", "port": 3307, "user": "bench",
                                                       "password": "s3cret"}, "db", "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384")
    assert tcp.cmd[:6] == ["/usr/bin/mariadb", "--no-defaults", "--host=127.0.0.1", "--port=3307", "--user=bench",
                           "--protocol=TCP"]
    assert {"--tls-version=TLSv1.2", "--ssl-cipher=ECDHE-RSA-AES256-GCM-SHA384"} <= set(tcp.cmd)
    assert "s3cret" not in " ".join(tcp.cmd) and tcp.env["MYSQL_PWD"] == "s3cret"  # never on the command line
    cnf = maria_storm.NativeStorm("mariadb", {"host": "localhost", "port": 3306, "unix_socket": "/run/m.sock",
                                              "read_default_file": "/root/.my.cnf"}, "db", "off")
    assert cnf.cmd[1] == "--defaults-file=/root/.my.cnf" and "--socket=/run/m.sock" in cnf.cmd
    assert "--protocol=SOCKET" in cnf.cmd and "--skip-ssl" in cnf.cmd and not any("--user" in a for a in cnf.cmd)


def test_a_driver_whose_server_died_says_the_server_went_away():
    from encbench.engines.local.storm_client import driver_failure
    from encbench.errors import CheckFailedError, EngineUnavailableError

    e = driver_failure("the native storm driver the storm failed",
                       "storm: server closed the connection unexpectedly\n\tThis probably means the server "
                       "terminated abnormally\n\tbefore or while processing the request.\n")
    assert isinstance(e, EngineUnavailableError) and "the server went away: storm: server closed" in str(e)
    e = driver_failure("the mariadb client (storm) exited", "ERROR 2013 (HY000) at line 2: Lost connection to server "
                       "during query\n")
    assert isinstance(e, EngineUnavailableError)
    e = driver_failure("the native storm driver the storm failed", "storm: ERROR:  permission denied\n")
    assert isinstance(e, CheckFailedError) and "permission denied" in str(e)


def test_compare_and_gate_do_not_judge_a_saturated_client():
    from encbench.analysis import compare
    from encbench.analysis import gate

    def file(shares_on: list[float], slowdown: float) -> dict:
        doc = _doc([0.5] * 6, shares_on)
        for run in doc["runs"]:
            if run["variant"]["tls"] == "on":  # the encrypted runs slowed down: a gate would fail on it
                run["operations"][0]["metrics"]["wall_s"] *= slowdown
        doc["dataset"] = {"rows": 1}
        doc["environment"]["cpu"]["model"] = "x"
        return doc

    a = file([0.5] * 6, 1.0)
    out = compare.compare(a, file([0.5, 0.5, 0.97, 0.5, 0.5, 0.5], 1.5))
    rows = [r for r in out["comparisons"] if r["variant"] == "tls=on" and r["metric"] == "wall_s"]
    assert {r["kind"] for r in rows} == {"absolute", "overhead"}
    assert all(r["verdict"] == "withheld" and "B tls=on 1 of 6 runs" in r["verdict_text"] for r in rows), rows
    res = gate.evaluate([gate.parse("elapsed_overhead>5%")], out["comparisons"])
    assert not res["failed"] and any("client was saturated" in line for line in res["not_judged"]), res
    # the same slowdown with the client below the limit is judged, and fails the gate
    calm = compare.compare(a, file([0.5] * 6, 1.5))["comparisons"]
    assert gate.evaluate([gate.parse("elapsed_overhead>5%")], calm)["failed"]
