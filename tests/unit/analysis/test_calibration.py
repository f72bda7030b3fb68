"""Issue 31: every unit cost of the bill fitted at once (analysis/fit.solve: at rest with log bytes, in transit with
sessions, bytes and records received and sent), the calibration file (analysis/calibration.py) and `estimate --from` it: a term the
design cannot fit, or fitted but not resolved, is said so, never a zero or a partial total."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from encbench.analysis import calibration, fit
from encbench.analysis.bill import TERM_KINDS
from encbench.lab import results


def _noise(i: int) -> float:
    return 1 + 0.01 * ((i * 7) % 5 - 2)


def _rows(cells: dict, costs: dict, runs: int = 6) -> list[fit.Row]:
    """cells: name -> (plain cost, counts per unit of work); y = plain + encrypted x sum(cost x count), 1% noise."""
    out = []
    for cell, (plain, x) in cells.items():
        for enc in (False, True):
            for i in range(runs):
                y = (plain + (sum(costs[k] * v for k, v in x.items()) if enc else 0.0)) * _noise(i + enc)
                out.append(fit.Row(cell, enc, y, dict(x)))
    return out


def test_log_bytes_are_fitted_with_reads_and_writes_when_the_mixes_vary_them_apart():
    truth = {"reads": 14e-6, "writes": 40e-6, "log_bytes": 2e-9}
    cells = {"ro,25%": (300e-6, {"reads": 2.0, "writes": 0.0, "log_bytes": 0.0}),
             "rw,100%": (900e-6, {"reads": 0.0, "writes": 0.0, "log_bytes": 60_000.0}),
             "rw,25%": (950e-6, {"reads": 3.0, "writes": 4.0, "log_bytes": 62_000.0})}
    got = fit.solve(_rows(cells, truth), list(fit.ATREST_COUNTS))
    assert got["runs"] == 36 and got["df"] == 36 - 6
    for term, value in truth.items():
        c = got["costs"][term]
        assert c["value"] == pytest.approx(value, rel=0.15) and c["ci"][0] < value < c["ci"][1], (term, c)


def test_a_commits_cost_comes_apart_from_the_pages_only_with_mixes_of_other_pages_per_commit():
    """SQLite: SQLCipher adds about a page's encryption per commit. Over a read-only mix and tpcb-like alone (4 pages
    per commit) it cannot be told from the page's cost (a fit without the term would price simple-update's 2 pages
    per commit short); update-one (1 per commit) and update-batch (8) set them apart."""
    truth = {"reads": 8e-6, "writes": 15e-6, "commits": 18e-6}
    ro = {"reads": 0.76, "writes": 0.0, "log_bytes": 0.0, "commits": 0.0}
    tpcb = {"reads": 0.78, "writes": 4.07, "log_bytes": 0.0, "commits": 1.0}
    cells = {"select-only,25%": (6e-6, ro), "tpcb-like,25%": (125e-6, tpcb),
             "tpcb-like,100%": (124e-6, dict(tpcb, reads=0.0))}
    got = fit.solve(_rows(cells, {**truth, "log_bytes": 0.0}), ["reads", "writes", "commits"])
    assert "never varied apart from reads, writes" in got["costs"]["commits"]["why"]
    cells = {"select-only,25%": (6e-6, ro),
             "update-one,100%": (90e-6, {"reads": 0.0, "writes": 1.0, "log_bytes": 0.0, "commits": 1.0}),
             "update-one,25%": (92e-6, {"reads": 0.78, "writes": 1.0, "log_bytes": 0.0, "commits": 1.0}),
             "update-batch,25%": (160e-6, {"reads": 6.2, "writes": 8.1, "log_bytes": 0.0, "commits": 1.0})}
    got = fit.solve(_rows(cells, {**truth, "log_bytes": 0.0}), ["reads", "writes", "commits"])
    for term, value in truth.items():
        c = got["costs"][term]
        assert c["value"] == pytest.approx(value, rel=0.15) and c["ci"][0] < value < c["ci"][1], (term, c)
    # the count: the driver's own (the run's `extra`), per transaction
    x = fit.counts_of({"pages_read": 10.0, "pages_written": 40.0}, {"commits": 10}, 10, fit.Basis())
    assert x == {"reads": 1.0, "writes": 4.0, "log_bytes": 0.0, "commits": 1.0}


def test_a_term_no_mix_did_or_that_never_varied_apart_is_not_fitted_never_zero():
    cells = {"ro": (300e-6, {"reads": 2.0, "writes": 0.0, "log_bytes": 0.0}),
             "rw": (900e-6, {"reads": 2.0, "writes": 4.0, "log_bytes": 0.0})}
    got = fit.solve(_rows(cells, {"reads": 1e-5, "writes": 4e-5, "log_bytes": 0.0}), list(fit.ATREST_COUNTS))
    assert "value" in got["costs"]["reads"] and "value" in got["costs"]["writes"]
    assert set(got["costs"]["log_bytes"]) == {"why"} and "count was 0" in got["costs"]["log_bytes"]["why"]
    # writes always 2x reads: the second term cannot be told from the first
    same = {"a": (1e-4, {"reads": 1.0, "writes": 2.0}), "b": (2e-4, {"reads": 3.0, "writes": 6.0})}
    got = fit.solve(_rows(same, {"reads": 1e-5, "writes": 1e-5}), ["reads", "writes"])
    assert "value" in got["costs"]["reads"] and "never varied apart from reads" in got["costs"]["writes"]["why"]
    assert fit.solve([], ["reads"])["costs"]["reads"] == {"why": "no runs"}


def test_transit_counts_of_very_different_scales_and_repeated_cpu_ticks_fit():
    """bytes (10^6) beside sessions (1) and groups whose CPU repeats to the last digit (a 10 ms tick): no singular
    matrix, and the costs come back."""
    truth = {"tls_handshakes": 2e-3, "tls_bytes": 0.7e-9, "tls_records_in": 10e-6, "tls_records_out": 1e-6}
    records = ("tls_records_in", "tls_records_out")
    cells = {"connect": (5e-3, {"tls_handshakes": 1.0, "tls_bytes": 0.0, **dict.fromkeys(records, 1.0)}),
             "bulk": (0.2, {"tls_handshakes": 0.0, "tls_bytes": 2e8, "tls_records_in": 1.0, "tls_records_out": 3000.0}),
             "roundtrip": (30e-6, {"tls_handshakes": 1 / 3000, "tls_bytes": 0.0, **dict.fromkeys(records, 1.0)}),
             "storm": (0.05, {"tls_handshakes": 0.0, "tls_bytes": 0.0, "tls_records_in": 1.0,
                              "tls_records_out": 20000.0})}
    rows = _rows(cells, truth)
    rows += [fit.Row("connect", True, 0.29, cells["connect"][1]), fit.Row("connect", True, 0.29 + 4e-17,
                                                                        cells["connect"][1])]
    got = fit.solve(rows, list(fit.TRANSIT_WORDS))
    assert all("value" in c for c in got["costs"].values()), got
    assert got["costs"]["tls_bytes"]["value"] == pytest.approx(0.7e-9, rel=0.2)


def _transit_doc() -> dict:
    runs = []
    for tls in ("off", "on"):
        for i in range(6):
            k = _noise(i + (tls == "on"))
            on = tls == "on"
            ops = {"connect": ({"cpu_s": 100 * (5e-3 + 2e-3 * on) * k}, {"connections": 100}),
                   "bulk": ({"cpu_s": (0.1 + 2e8 * 0.7e-9 * on) * k, "net_bytes_received": 2e8, "net_bytes_sent": 60},
                            {"bytes_received": 2e8}),
                   "roundtrip": ({"cpu_s": 3000 * (30e-6 + (10e-6 + 1e-6) * on) * k}, {"queries": 3000}),
                   "storm": ({"cpu_s": (0.05 + (20000 * 1e-6 + 10e-6) * on) * k},
                             {"messages": 20000, "messages_received": 20000})}
            for wl, (m, extra) in ops.items():
                runs.append({"workload": wl, "variant": {"tls": tls}, "warmup": False,
                             "operations": [{"operation": wl, "metrics": m, "extra": extra}]})
    return {"engine": {"name": "postgres"}, "config": {"runs": 6}, "runs": runs}


def test_a_calibration_names_every_term_absent_not_fitted_refused_or_fitted(tmp_path):
    _calibration(tmp_path)


def _calibration(tmp_path):
    doc = calibration.build("postgres", {"page_size": None, "cipher": None},
                            {"in_transit": (_transit_doc(), tmp_path / "t.json")},
                            refused={"at_rest": "--dsn: the at-rest mixes need a private server"})
    assert set(doc["costs"]) | set(doc["absent"]) == set(TERM_KINDS) and "tls_resumptions" in doc["absent"]
    for term in ("tls_handshakes", "tls_bytes", "tls_records_in", "tls_records_out"):
        c = doc["costs"][term]
        assert c["value_s"] > 0 and c["why"] is None and "fitted per" in c["fitted_from"], (term, c)
    assert doc["costs"]["tls_handshakes"]["value_s"] == pytest.approx(2e-3, rel=0.1)
    assert doc["costs"]["reads"]["why"].startswith("--dsn") and doc["costs"]["reads"]["value_s"] is None
    assert "sort" in doc["costs"]["temp_bytes"]["why"]  # what would measure it
    assert doc["resolved"] is False and doc["fitted_resolved"] is True  # what it ran resolved; the rest is said
    text = "\n".join(calibration.lines(doc, "cal.json"))
    assert "page reads: NOT RESOLVED: --dsn" in text and "resumed TLS sessions: absent" in text
    path = tmp_path / "cal.json"
    results.write_atomic(path, doc)
    assert calibration.is_calibration(path) and calibration.load(path)["engine"] == "postgres"
    return path


def _estimate(*args):
    return subprocess.run([sys.executable, "-m", "encbench.cli", "estimate", *args], capture_output=True, text=True,
                          timeout=60)


def test_estimate_prices_a_bill_from_a_calibration_and_an_unfitted_term_leaves_it_not_resolved(tmp_path):
    path = _calibration(tmp_path)
    rates = ["--rate", "tls_handshakes=35/s", "--rate", "tls_bytes=2MB/s", "--rate", "tls_records_in=2500/s",
             "--rate", "tls_records_out=2500/s"]
    res = _estimate("--from", str(path), *rates, "--side", "in-transit", "--cores", "4", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["resolved"] and out["added_cores"] == pytest.approx(35 * 2e-3 + 2e6 * 0.7e-9 + 2500 * 11e-6, rel=0.1)
    assert out["target"] == "postgres"
    assert "tls_resumptions" in {a["name"] for a in out["absent"]}  # the calibration's absent term, not "no rate"
    res = _estimate("--from", str(path), *rates, "--rate", "reads=100/s", "--cores", "4")
    assert res.returncode == 24, res.stderr
    assert "page reads 100/s x n/a: NOT RESOLVED: --dsn" in res.stdout and "total: NOT RESOLVED: page reads" \
        in res.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "encbench-calibration", "version": 99, "costs": {}}))
    res = _estimate("--from", str(bad), *rates)
    assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1 and "version 99" in res.stderr


def _calibrate(*args, cwd):
    return subprocess.run([sys.executable, "-m", "encbench.cli", "calibrate", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def test_calibrate_refuses_a_param_no_mix_takes_and_a_dsn_of_another_engine_in_one_line(tmp_path):
    res = _calibrate("--engine", "sqlite", "--param", "nonsense=1", "-o", str(tmp_path / "c.json"), cwd=tmp_path)
    assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1 and "'nonsense'" in res.stderr, res
    res = _calibrate("--engine", "postgres", "--dsn", "mysql://u:secret@127.0.0.1:1/", "-o", str(tmp_path / "c.json"),
                     cwd=tmp_path)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "secret" not in res.stderr, res
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written


def test_a_fifo_is_not_opened_to_ask_whether_it_is_a_calibration(tmp_path):
    """estimate --from FIFO: the format sniff must not block on a FIFO (the result-file reader refuses it, exit 6)."""
    import os

    from encbench.analysis import calibration

    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    assert calibration.is_calibration(fifo) is False
    assert calibration.is_calibration(tmp_path / "missing.json") is False


def test_each_engines_absent_and_unfitted_terms_are_read_from_its_registry_entry(monkeypatch):
    """issue 31's review: the terms an engine's bill never has, and those calibrate cannot fit, are declared on its
    ENGINES entry (no module of the engine's imported by a name built from a string)."""
    from encbench.engines import DEFAULT_ENGINE, ENGINES

    for name, e in ENGINES.items():
        absent, not_fitted = calibration.engine_facts(name)
        assert (absent, not_fitted) == (e.calibration_absent, e.calibration_not_fitted), name
        assert set(absent) | set(not_fitted) <= set(TERM_KINDS) and not set(absent) & set(not_fitted), name
        assert all(isinstance(w, str) and w for w in (*absent.values(), *not_fitted.values())), name
    monkeypatch.setattr(ENGINES.get(DEFAULT_ENGINE), "calibration_not_fitted", {"temp_bytes": "declared here"})
    assert calibration.engine_facts(DEFAULT_ENGINE)[1] == {"temp_bytes": "declared here"}
    doc = calibration.build(DEFAULT_ENGINE, {}, {})
    assert doc["costs"]["temp_bytes"]["why"] == "declared here"
    assert calibration.engine_facts("an-engine-of-another-version") == ({}, {})
