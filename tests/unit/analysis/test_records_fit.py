"""Issue 31, the in-transit bill: a TLS record the server receives (a client's request: a wake-up, the record's reads,
a decrypt) costs it far more than one it sends, so the bill prices records received and sent apart, each fitted by
`calibrate` over the roundtrip (one each way per query) and storm (many sent, one received) mixes; a calibration file
from before (one `tls_messages` cost) still loads, read as before and said."""

from __future__ import annotations

import json

import pytest

from encbench.analysis import calibration, fit
from encbench.analysis.bill import TERM_KINDS
from encbench.lab import results

RECEIVED, SENT = 10e-6, 1e-6  # a request received costs the server 10 µs of TLS, a record sent 1 µs


def _noise(i: int) -> float:
    return 1 + 0.01 * ((i * 7) % 5 - 2)


def _doc() -> dict:
    """connect, bulk, roundtrip and storm runs, tls off and on, whose added server CPU is exactly a handshake's,
    a byte's, and the records received and sent at RECEIVED and SENT each (1% noise)."""
    runs = []
    for tls in ("off", "on"):
        on = tls == "on"
        for i in range(6):
            k = _noise(i + on)
            ops = {"connect": ({"cpu_s": 100 * (5e-3 + (2e-3 + RECEIVED + SENT) * on) * k}, {"connections": 100}),
                   "bulk": ({"cpu_s": (0.1 + (2e8 * 0.7e-9 + RECEIVED + 3000 * SENT) * on) * k,
                             "net_bytes_received": 2e8, "net_bytes_sent": 60, "net_data_segments_out": 1,
                             "net_data_segments_in": 3000}, {"bytes_received": 2e8}),
                   "roundtrip": ({"cpu_s": 3000 * (30e-6 + (RECEIVED + SENT) * on) * k}, {"queries": 3000}),
                   "storm": ({"cpu_s": (0.05 + (RECEIVED + 20000 * SENT) * on) * k},
                             {"messages": 20000, "messages_received": 20000})}
            for wl, (m, extra) in ops.items():
                runs.append({"workload": wl, "variant": {"tls": tls, "clients": 1}, "warmup": False,
                             "operations": [{"operation": "messages" if wl == "storm" else wl, "metrics": m,
                                             "extra": extra}]})
    return {"engine": {"name": "postgres"}, "config": {"runs": 6}, "runs": runs}


def test_calibrate_recovers_a_record_received_and_a_record_sent_apart():
    got = fit.fit_transit(_doc())["costs"]
    for term, truth in (("tls_records_in", RECEIVED), ("tls_records_out", SENT)):
        c = got[term]
        assert c["value"] == pytest.approx(truth, rel=0.15) and c["ci"][0] < truth < c["ci"][1], (term, c)
    assert got["tls_handshakes"]["value"] == pytest.approx(2e-3, rel=0.05)


def test_one_cost_per_message_cannot_price_both_a_roundtrip_and_a_storm():
    """The single term of before: fitted over the same runs, a message costs what the storm's many sent records
    cost, and a roundtrip's request and reply are billed a fraction of what they cost."""
    rows = [fit.Row(r.cell, r.encrypted, r.y, {**{k: v for k, v in r.x.items() if not k.startswith("tls_records")},
                                               "messages": r.x["tls_records_in"] + r.x["tls_records_out"]})
            for r in fit.transit_rows(_doc())]
    one = fit.solve(rows, ["tls_handshakes", "tls_bytes", "messages"])["costs"]["messages"]["value"]
    assert one < 2 * SENT  # the storm's 20,000 records decide it
    assert 2 * one < 0.3 * (RECEIVED + SENT)  # a roundtrip billed under 30% of its 11 µs


def _old_calibration(tmp_path):
    """A version 1 calibration file: one tls_messages cost (and an engine whose messages were absent)."""
    cost = {"value_s": 1.5e-6, "ci_s": [1.2e-6, 1.8e-6], "fitted_from": "fitted per message over TLS over 36 runs",
            "runs": 6, "why": None}
    doc = {"format": calibration.FORMAT, "version": 1, "engine": "postgres", "created_at": "2026-11-27T10:00:00Z",
           "command": "encbench calibrate", "setup": {"page_size": None, "cipher": None},
           "results": {"at_rest": None, "in_transit": "t.json"}, "fits": {"at_rest": None, "in_transit": None},
           "costs": {"tls_handshakes": dict(cost, value_s=2e-3, ci_s=[1.8e-3, 2.2e-3]), "tls_messages": cost},
           "absent": {"tls_resumptions": "no caching"}, "resolved": True, "fitted_resolved": True}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_calibration_of_the_old_format_prices_a_record_each_way_at_its_one_message_cost_and_says_so(tmp_path):
    path = _old_calibration(tmp_path)
    doc = calibration.load(path)
    costs = calibration.costs_of(doc, path)
    assert "tls_messages" not in costs and costs["tls_handshakes"][0].value == 2e-3
    for term in ("tls_records_in", "tls_records_out"):
        cost = costs[term][0]
        assert cost.value == 1.5e-6 and cost.ci == (1.2e-6, 1.8e-6) and "version 1" in cost.source, cost
    text = "\n".join(calibration.lines(doc, path))
    assert "TLS records received by the server: 1.5 µs" in text and "calibrate again" in text
    absent = dict(json.loads(path.read_text()), absent={"tls_messages": "an embedded engine"})
    path.write_text(json.dumps(absent))
    assert set(calibration.load(path)["absent"]) == {"tls_records_in", "tls_records_out"}


def test_a_new_calibration_names_both_record_terms_and_is_version_2(tmp_path):
    doc = calibration.build("postgres", {"page_size": None, "cipher": None}, {"in_transit": (_doc(), "t.json")})
    assert doc["version"] == 2 and {"tls_records_in", "tls_records_out"} <= set(doc["costs"])
    assert "tls_messages" not in TERM_KINDS
    results.write_atomic(tmp_path / "new.json", doc)
    got = calibration.costs_of(calibration.load(tmp_path / "new.json"), "new.json")
    assert got["tls_records_in"][0].value == pytest.approx(RECEIVED, rel=0.15)
    assert "per TLS record the server received" in got["tls_records_in"][0].source


def test_a_rate_given_for_the_old_messages_term_names_the_two_record_terms():
    from encbench.analysis import estimate
    from encbench.errors import BadValueError

    with pytest.raises(BadValueError) as e:
        estimate.split_rate("tls_messages=5000/s")
    assert "tls_records_in" in e.value.hint and "tls_records_out" in e.value.hint
    assert estimate.split_rate("tls_records_in=2500/s") == ("tls_records_in", "2500/s")


def test_a_roundtrip_whose_socket_was_lost_is_taken_at_one_record_each_way_per_query():
    """host/sockets can lose a driver's socket (0 or a few segments counted for thousands of queries): a run that
    counted fewer requests than it ran queries is taken as assumed, never as a TLS run that received nothing."""
    lost = {"queries": 1900, "tls_checked_connections": 1, "server_net_bytes": 0, "server_net_messages_in": 0,
            "server_net_messages_out": 0}
    _, x = fit._transit_counts("roundtrip", {}, lost)
    assert (x["tls_records_in"], x["tls_records_out"]) == (1900, 1900)
    whole = dict(lost, server_net_messages_in=1905, server_net_messages_out=1903)
    assert fit._transit_counts("roundtrip", {}, whole)[1]["tls_records_in"] == 1905


def _drifting(rounds: int = 12) -> dict:
    """bulk and roundtrip runs in interleaved rounds whose plain server CPU drifts by up to ±35% from round to round
    (both sides of a round alike, as a VM's does), TLS adding exactly 0.5 ns a byte and RECEIVED + SENT a query."""
    runs = []
    for i in range(rounds):
        drift = 1 + 0.35 * ((i * 5) % 7 - 3) / 3
        for tls in (("off", "on") if i % 2 == 0 else ("on", "off")):
            on = tls == "on"
            ops = {"bulk": ({"cpu_s": 0.4 * drift + 1.5e8 * 0.5e-9 * on, "net_bytes_received": 1.5e8,
                             "net_bytes_sent": 60, "net_data_segments_out": 1, "net_data_segments_in": 3000},
                            {"bytes_received": 1.5e8}),
                   "roundtrip": ({"cpu_s": 3000 * (30e-6 * drift + (RECEIVED + SENT) * on)}, {"queries": 3000})}
            for wl, (m, extra) in ops.items():
                runs.append({"workload": wl, "variant": {"tls": tls, "clients": 1}, "warmup": False, "round": i,
                             "operations": [{"operation": wl, "metrics": m, "extra": extra}]})
    return {"engine": {"name": "postgres"}, "config": {"runs": rounds}, "runs": runs}


def test_the_transit_fit_pairs_each_rounds_runs_so_the_drift_between_rounds_cancels():
    """Measured: a 150 MB COPY's plain server CPU read 0.29-0.53 s over 12 rounds while TLS added ~0.09 s to each;
    fitted per mix the byte cost's CI reached zero. Blocked by round, it resolves, and on the true value."""
    doc = _drifting()
    blocked = fit.fit_transit(doc, ["tls_bytes"])
    assert blocked["method"] == fit.METHOD_BLOCKED and blocked["cells"] == ["bulk/bulk,clients=1",
                                                                            "roundtrip/roundtrip,clients=1"]
    c = blocked["costs"]["tls_bytes"]
    assert c["ci"][0] > 0 and c["value"] == pytest.approx(0.5e-9, rel=0.05)
    per_mix = fit.solve(fit.transit_rows(doc), ["tls_bytes"])["costs"]["tls_bytes"]  # one plain cost per mix
    assert per_mix["ci"][0] < 0  # the drift swamps it
