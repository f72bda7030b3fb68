"""bench/estimate_heldout.py's arithmetic: a mix's predicted bill from its counters, the error and its CI, the
median and worst |error| with the interval the mixes' CIs bound (issue 31)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from encbench.analysis.bill import UnitCost

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("estimate_heldout", ROOT / "bench" / "estimate_heldout.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["estimate_heldout"] = mod
    spec.loader.exec_module(mod)
    return mod


B = _bench()


def test_prediction_prices_only_the_sides_terms_and_names_what_it_left_out():
    costs = {"reads": UnitCost(10e-6, (8e-6, 12e-6), "fit"), "writes": UnitCost(30e-6, (20e-6, 40e-6), "fit"),
             "tls_bytes": UnitCost(1e-9, (0.5e-9, 1.5e-9), "bulk")}
    p = B.predict({"reads": 2.0, "writes": 1.0, "tls_bytes": 1000.0}, costs, "at rest")
    assert p["predicted_us"] == pytest.approx(50.0) and set(p["parts_us"]) == {"reads", "writes"}
    se = ((2 * 2e-6 / B.Z95) ** 2 + (1 * 10e-6 / B.Z95) ** 2) ** 0.5 * 1e6
    assert p["predicted_se_us"] == pytest.approx(se)
    t = B.predict({"tls_handshakes": 0.001, "tls_bytes": 1000.0}, costs, "in transit")
    assert t["predicted_us"] == pytest.approx(1.0)
    assert any("tls_handshakes: no calibrated cost" in x for x in t["left_out"])
    assert any("tls_records_in: no counter" in x for x in t["left_out"])


def test_error_and_its_ci_by_the_delta_method():
    err, ci = B.error_of(110.0, 0.0, 100.0, [100.0 - 19.59964, 100.0 + 19.59964])
    assert err == pytest.approx(10.0)
    assert ci == pytest.approx([10 - 1.959964 * 11, 10 + 1.959964 * 11], rel=1e-6)  # se of the ratio 1.1 x 0.1
    assert B.error_of(5.0, 1.0, 0.0, [-1, 1]) == (None, None)


def test_abs_error_bounds_and_the_summary():
    assert B.abs_ci([-5.0, 12.0]) == [0.0, 12.0] and B.abs_ci([-30.0, -10.0]) == [10.0, 30.0]
    rows = [{"error_pct": 5.0, "error_ci_pct": [-1.0, 11.0]}, {"error_pct": -20.0, "error_ci_pct": [-30.0, -10.0]},
            {"error_pct": 12.0, "error_ci_pct": [4.0, 20.0]}, {"error_pct": None, "resolved": False}]
    s = B.summarize(rows)
    assert (s["mixes"], s["checked"], s["unresolved"], s["within_15_pct"]) == (4, 3, 1, 2)
    assert s["median_abs_error_pct"] == 12.0 and s["median_ci_pct"] == [4.0, 20.0]
    assert s["worst_abs_error_pct"] == 20.0 and s["worst_ci_pct"] == [10.0, 30.0]
    assert B.summarize([{"error_pct": None}])["checked"] == 0


def test_every_engine_has_a_setup_and_a_calibration_design_the_held_out_share_avoids():
    from encbench.engines import ENGINES

    for s in B.SETUPS:
        assert s.engine in B.CALIBRATION_VARIANTS
        cal = B.CALIBRATION_VARIANTS[s.engine]
        assert tuple(ENGINES.get(s.engine).calibration_variants) == cal  # the --quick copy is calibrate's design
        assert B.HELD_OUT_MEMORY not in next(v for v in cal if v.startswith("memory=")).split("=")[1].split(",")


def test_uncounted_tls_records_are_assumed_from_the_script_and_said_so():
    costs = {"tls_records_in": UnitCost(10e-6, (8e-6, 12e-6), "fit"), "tls_records_out": UnitCost(2e-6, (1e-6, 3e-6),
                                                                                                 "fit")}
    p = B.predict({"tls_handshakes": 0.0001}, costs, "in transit", "tpcb-like")
    assert p["parts_us"]["tls_records_in"] == pytest.approx(70.0) and p["parts_us"]["tls_records_out"] == \
        pytest.approx(14.0)
    assert "1 per statement of tpcb-like (its query)" in p["assumed"][0] and "(its reply)" in p["assumed"][1]
    assert B.predict({"reads": 1.0}, costs, "at rest", "tpcb-like")["assumed"] == []


def test_a_bill_with_an_unresolved_cost_or_an_uncounted_rate_is_not_resolved_and_gives_no_error():
    costs = {"reads": UnitCost(10e-6, (8e-6, 12e-6), "fit"), "writes": UnitCost(-50e-6, (-90e-6, 10e-6), "fit")}
    assert B.predict({"reads": 2.0, "writes": 0.0, "log_bytes": 0.0, "commits": 0.0}, costs,
                     "at rest")["bill_resolved"]  # 0 x any
    p = B.predict({"reads": 2.0, "writes": 1.0}, costs, "at rest")
    assert not p["bill_resolved"] and p["bill_unresolved"][0].startswith("writes: ")
    t = B.predict({"tls_handshakes": 0.001}, {"tls_handshakes": UnitCost(2e-3, (1e-3, 3e-3), "connect")}, "in transit")
    assert not t["bill_resolved"] and any("tls_bytes: no counter" in x for x in t["bill_unresolved"])
    s = B.summarize([{"error_pct": None, "resolved": True, "bill_resolved": False},
                     {"error_pct": None, "resolved": False}])
    assert (s["checked"], s["added_cpu_unresolved"], s["bill_unresolved"]) == (0, 1, 1)


def test_a_mix_unresolved_on_both_sides_is_counted_on_both():
    s = B.summarize([{"error_pct": None, "resolved": False, "bill_resolved": False}])
    assert (s["unresolved"], s["added_cpu_unresolved"], s["bill_unresolved"]) == (1, 1, 1)


def test_the_log_term_is_priced_at_rest_and_left_out_where_the_engine_has_none():
    costs = {"reads": UnitCost(10e-6, (8e-6, 12e-6), "fit"), "log_bytes": UnitCost(10e-9, (5e-9, 15e-9), "fit")}
    p = B.predict({"reads": 1.0, "writes": 0.0, "log_bytes": 4000.0}, costs, "at rest", absent={"commits"})
    assert p["parts_us"]["log_bytes"] == pytest.approx(40.0) and p["predicted_us"] == pytest.approx(50.0)
    assert p["bill_resolved"]
    q = B.predict({"reads": 1.0, "writes": 0.0, "commits": 0.0}, costs, "at rest", absent={"log_bytes"})  # SQLite
    assert q["bill_resolved"] and "log_bytes" not in q["parts_us"]
    assert B._absent("sqlite") >= {"log_bytes"} and "log_bytes" not in B._absent("postgres")
    assert "commits" in B._absent("postgres") and "commits" in B._absent("mariadb")  # a commit is log bytes there
    assert "commits" not in B._absent("sqlite")


def test_fscrypt_mixes_are_priced_by_the_kernels_page_reads_and_its_log_bytes():
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "analysis"))
    from test_kernel_fit import _doc

    doc = _doc()
    label = next(r["variant_label"] for r in doc["runs"] if r["variant"]["encryption"] == "fscrypt"
                 and r["variant"]["script"] == "tpcb-like" and r["variant"]["memory"] == "25%")
    got = B._per_txn(doc, label, "tpcb-like")
    assert got["reads"] == pytest.approx(2.9) and got["log_bytes"] == pytest.approx(3600.0)
    assert got["writes"] == pytest.approx(1.6) and got["tls_handshakes"] == pytest.approx(1 / 1000)


def test_only_selects_setups_by_tag_or_name_and_refuses_an_unknown_one():
    assert B.selected(None) == set()
    assert B.selected("postgres:fscrypt") == {("postgres", "fscrypt")}
    assert B.selected("mariadb:encrypted tables,sqlite:sqlcipher") == {("mariadb", "encrypted tables"),
                                                                        ("sqlite", "sqlcipher")}
    with pytest.raises(SystemExit, match="unknown setup"):
        B.selected("postgres:gocryptfs")


def _tls_doc(shapes: dict) -> dict:
    """A PostgreSQL oltp file whose tls=on runs' traffic was counted as `shapes` says (label -> (metrics, extra)),
    100 transactions each, 2 clients."""
    keys = [{"name": k, "applies_when": []} for k in ("tls", "memory", "clients", "script")]
    runs = []
    for label, (m, x) in shapes.items():
        variant = {"tls": "on", "memory": "50%", "clients": "2", "script": "tpcb-like"}
        runs.append({"workload": "oltp", "variant": variant, "variant_label": label, "warmup": False,
                     "operations": [{"operation": "mix", "metrics": {"cpu_s": 0.1, **m},
                                     "extra": {"transactions": 100, **x}}]})
    return {"engine": {"name": "postgres", "axis": "encryption", "axis_baseline": "off", "variant_keys": keys},
            "runs": runs}


SHAPES = {  # what a run's traffic was counted from
    "server": ({}, {"server_net_bytes": 70_000, "server_net_messages_in": 700, "server_net_messages_out": 650}),
    "server, no segments": ({"net_bytes_sent": 900, "net_bytes_received": 900, "net_data_segments_out": 9,
                             "net_data_segments_in": 9}, {"server_net_bytes": 70_000}),
    "client, one way": ({"net_bytes_sent": 4_000, "net_data_segments_out": 40, "net_data_segments_in": 30}, {}),
    "nothing": ({"net_bytes_sent": 0, "net_bytes_received": 0, "net_data_segments_out": 0,
                 "net_data_segments_in": 0}, {}),
}


def test_a_held_out_mix_is_counted_in_transit_exactly_as_calibrate_counts_its_runs():
    """issue 31's review: the bench's bytes and records per transaction are analysis/fit's, not a copy of its rules:
    a run whose server sockets were followed without their data segments has no records counted (not the idle worker
    socket's), a client socket that counted one way its bytes, and one that carried nothing no count at all."""
    from encbench.analysis import fit

    doc = _tls_doc(SHAPES)
    for label, (m, x) in SHAPES.items():
        got = B._per_txn(doc, label, "tpcb-like")
        want = {k: v / 100 for k, v in fit.oltp_transit_counts({"clients": "2"}, {"cpu_s": 0.1, **m},
                                                                 {"transactions": 100, **x}).items()}
        assert got == pytest.approx(want), label
    assert B._per_txn(doc, "server", "tpcb-like") == pytest.approx(
        {"tls_handshakes": 0.02, "tls_bytes": 700.0, "tls_records_in": 7.0, "tls_records_out": 6.5})
    no_segments = B._per_txn(doc, "server, no segments", "tpcb-like")
    assert no_segments["tls_bytes"] == 700.0 and "tls_records_in" not in no_segments
    assert B._per_txn(doc, "client, one way", "tpcb-like")["tls_bytes"] == pytest.approx(40.0)
    assert B._per_txn(doc, "nothing", "tpcb-like") == {"tls_handshakes": 0.02}
    # calibrate's own transit runs read the same counts (its bytes 0 where nothing counted them)
    assert fit._wire({}, SHAPES["server, no segments"][1]) == (70_000, None, None)
    assert fit._wire(*SHAPES["nothing"]) == (0, None, None)


def test_records_nothing_counted_are_still_assumed_one_per_statement_and_said_so():
    costs = {"tls_handshakes": UnitCost(2e-3, (1e-3, 3e-3), "connect"), "tls_bytes": UnitCost(1e-9, (5e-10, 2e-9), "b"),
             "tls_records_in": UnitCost(10e-6, (8e-6, 12e-6), "fit"),
             "tls_records_out": UnitCost(2e-6, (1e-6, 3e-6), "fit")}
    doc = _tls_doc(SHAPES)
    p = B.predict(B._per_txn(doc, "server, no segments", "tpcb-like"), costs, "in transit", "tpcb-like")
    assert p["counts_per_txn"]["tls_records_in"] == 7.0 and p["counts_per_txn"]["tls_records_out"] == 7.0
    assert [a.split(":")[0] for a in p["assumed"]] == ["tls_records_in", "tls_records_out"]
    assert "1 per statement of tpcb-like (its query), not counted" in p["assumed"][0] and p["bill_resolved"]
    nothing = B.predict(B._per_txn(doc, "nothing", "tpcb-like"), costs, "in transit", "tpcb-like")
    assert "tls_bytes: no counter for this mix" in nothing["left_out"] and not nothing["bill_resolved"]


def test_an_imprecise_mix_runs_again_longer_and_says_so_when_it_stays_imprecise(monkeypatch, tmp_path):
    """--precision: a mix whose added CPU is resolved but ±50% runs again at twice the runs and seconds; one that
    stays wider than asked is still counted, with a note; one within it is not run again."""
    s = B.Setup("sqlite", "sqlcipher", "at rest", ("tpcb-like",), "encryption=off,on")
    wide = {"mix": "tpcb-like", "measured_us": 100.0, "measured_ci_us": [50.0, 150.0], "resolved": True,
            "predicted_us": 90.0, "bill_resolved": True, "error_pct": -10.0}
    narrow = dict(wide, measured_ci_us=[90.0, 110.0])
    calls = []

    def run(b, s_, scripts, runs, seconds, out):
        calls.append((runs, seconds))
        return {"runs": []}

    answers = iter([[wide], [wide], [narrow]])
    monkeypatch.setattr(B, "held_out_run", run)
    monkeypatch.setattr(B, "mixes_of", lambda *a, **k: [dict(r) for r in next(answers)])
    b = B.Bench(tmp_path, False, 6, 3, 2, precision_pct=20.0)
    rows = B.check_setup(b, s, {})
    assert calls == [(6, 3), (12, 6), (24, 12)] and rows[0]["extended"] == 2 and "note" not in rows[0]
    answers = iter([[wide], [wide]])
    calls.clear()
    rows = B.check_setup(B.Bench(tmp_path, False, 6, 3, 1, precision_pct=20.0), s, {})
    assert calls == [(6, 3), (12, 6)] and "±50%" in rows[0]["note"] and "wider than the ±20% asked" in rows[0]["note"]
    answers = iter([[narrow]])
    calls.clear()
    B.check_setup(B.Bench(tmp_path, False, 6, 3, 2, precision_pct=20.0), s, {})
    assert calls == [(6, 3)]


def test_mariadbs_held_out_setup_leaves_its_clear_redo_log_out_of_the_bill():
    """encbench's private MariaDB writes its redo log in the clear (innodb_encrypt_log=OFF): the encrypted tables'
    bill prices no log byte, as estimate --live leaves the term out on such a server."""
    maria = next(s for s in B.SETUPS if s.engine == "mariadb")
    assert maria.clear == ("log_bytes",)
    costs = {"reads": UnitCost(10e-6, (8e-6, 12e-6), "fit"), "writes": UnitCost(20e-6, (15e-6, 25e-6), "fit")}
    p = B.predict({"reads": 2.0, "writes": 1.0, "log_bytes": 1600.0}, costs, "at rest",
                  absent=B._absent("mariadb") | set(maria.clear))
    assert p["bill_resolved"] and p["predicted_us"] == pytest.approx(40.0) and "log_bytes" not in p["parts_us"]


def test_max_extend_takes_a_count_for_every_engine_and_one_per_engine():
    assert B._extends([]) == (None, {})
    assert B._extends(["3", "postgres=1"]) == (3, {"postgres": 1})
    with pytest.raises(SystemExit, match="unknown engine 'oracle'"):
        B._extends(["oracle=1"])
    with pytest.raises(SystemExit, match="not a whole number"):
        B._extends(["two"])
