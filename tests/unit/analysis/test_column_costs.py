"""The column workload's per-row CPU set beside the raw cipher (analysis/columncost): the side that does the
cipher work, the added CPU over `none` with its CI, the multiple of the raw cost, and a flag (no multiple) when
the engine would come out below its raw reference."""

from __future__ import annotations

import pytest

from encbench.analysis import columncost
from encbench.analysis import summary as an

ENGINE = {"name": "postgres", "axis": "method", "axis_baseline": "none",
          "variant_keys": [{"name": "method", "applies_when": []}]}
PGP_REF = {"algorithm": "openpgp-aes256-s2k", "cipher": "OpenPGP symmetric", "methods": ["pg-pgp"],
           "method": "the work in C",
           "encrypt": {"us_per_call": 170.0, "ci": [165.0, 175.0], "n": 5},
           "decrypt": {"us_per_call": 170.0, "ci": [165.0, 175.0], "n": 5},
           "parts": {"s2k-sha1": {"us_per_call": 169.9}, "aes-256-cfb-encrypt": {"us_per_call": 0.08},
                     "aes-256-cfb-decrypt": {"us_per_call": 0.01}, "sha1": {"us_per_call": 0.03}}}
AES_REF = {"algorithm": "aes-256-cbc-pkcs7", "methods": ["pg-aes"], "method": "the work in C",
           "encrypt": {"us_per_call": 0.035, "ci": [0.034, 0.036], "n": 5},
           "decrypt": {"us_per_call": 0.005, "ci": [0.004, 0.006], "n": 5}}


def _run(method: str, server_us: dict[str, float], client_us: float = 3.0) -> dict:
    ops = [{"operation": op, "metrics": {"cpu_s": us * 1e-2, "client_cpu_s": client_us * 1e-2, "wall_s": 1.0},
            "extra": {"cpu_us_per_row": us, "client_cpu_us_per_row": client_us}} for op, us in server_us.items()]
    return {"workload": "column", "variant": {"method": method}, "variant_label": f"method={method}",
            "operations": ops}


def _doc(runs: list[dict]) -> dict:
    """A result document as analyze() reads it, with these runs and both references."""
    return {"schema_version": 1, "status": "complete", "engine": ENGINE, "runs": runs,
            "environment": {"cpu": {"logical_cores": 2}, "os_cache": {}}, "workloads": {"column": {"params": {}}},
            "calibration": {"raw_column_cipher": {"openpgp-aes256-s2k": PGP_REF, "aes-256-cbc-pkcs7": AES_REF}}}


def _costs(doc: dict) -> dict[tuple[str, str], dict]:
    return {(e["method"], e["operation"]): e for e in columncost.column_costs(doc, an.collect(doc), an.baseline_for)}


def _jitter(i: int) -> float:
    return (i % 3 - 1) * 0.5


def test_in_database_method_server_cpu_added_over_none_beside_its_raw_cost():
    runs = [_run("none", {"insert": 20 + _jitter(i), "read": 5 + _jitter(i)}) for i in range(5)]
    runs += [_run("pg-pgp", {"insert": 420 + _jitter(i), "read": 405 + _jitter(i)}) for i in range(5)]
    costs = _costs(_doc(runs))
    ins, read = costs[("pg-pgp", "insert")], costs[("pg-pgp", "read")]
    assert (ins["side"], ins["direction"], read["direction"]) == ("server", "encrypt", "decrypt")
    assert ins["cpu_us_per_row"] == pytest.approx(420, abs=0.5) and ins["added_us_per_row"] == pytest.approx(400, abs=1)
    assert ins["added_us_per_row_ci"][0] < 400 < ins["added_us_per_row_ci"][1]
    assert ins["raw_us_per_value"] == 170.0 and ins["times_raw"] == pytest.approx(ins["added_us_per_row"] / 170.0)
    assert set(ins["raw_parts"]) == {"s2k-sha1", "aes-256-cfb-encrypt", "sha1"}  # not the other direction's part
    assert "aes-256-cfb-decrypt" in read["raw_parts"] and "raw_cipher_flag" not in ins
    text = "\n".join(columncost.lines(an.analyze(_doc(runs)).column_costs))
    assert "pg-pgp insert (encrypt): 420 µs per row of server CPU [419, 420], +400 µs over none [399, 401]" in text
    assert ("its cipher work on this CPU: 170 µs per value [165, 175] = 170 µs S2K (iterated SHA-1) + 0.08 µs "
            "AES-256-CFB + 0.03 µs SHA-1 (MDC) (openpgp-aes256-s2k); the added CPU is 2.4x it") in text


def test_an_engine_below_its_raw_reference_is_flagged_and_given_no_multiple():
    runs = [_run("none", {"insert": 20 + _jitter(i)}) for i in range(5)]
    runs += [_run("pg-pgp", {"insert": 120 + _jitter(i)}) for i in range(5)]  # +100 µs: below the raw 170
    e = _costs(_doc(runs))[("pg-pgp", "insert")]
    assert "times_raw" not in e and e["raw_cipher_flag"].startswith("contradicts its reference")
    noisy = [_run("none", {"insert": 20 + 60 * _jitter(i)}) for i in range(5)]
    noisy += [_run("pg-pgp", {"insert": 180 + 60 * _jitter(i)}) for i in range(5)]  # +160 µs, a wide CI
    e = _costs(_doc(noisy))[("pg-pgp", "insert")]
    assert "times_raw" not in e and e["raw_cipher_flag"].startswith("not resolved")
    wide = [_run("none", {"insert": 20 + 60 * _jitter(i)}) for i in range(5)]
    wide += [_run("pg-pgp", {"insert": 220 + 60 * _jitter(i)}) for i in range(5)]  # +200 µs, CI reaching below 170
    e = _costs(_doc(wide))[("pg-pgp", "insert")]
    assert e["times_raw"] == pytest.approx(200 / 170) and "lower end of its CI" in e["raw_cipher_flag"]


def test_client_method_on_a_server_is_set_beside_on_the_client_side_and_none_gets_no_entry():
    runs = [_run("none", {"read": 5.0}, client_us=3 + _jitter(i)) for i in range(5)]
    runs += [_run("client-gcm", {"read": 5.0}, client_us=6 + _jitter(i)) for i in range(5)]
    doc = _doc(runs)
    doc["calibration"]["raw_column_cipher"]["aes-256-gcm"] = {  # a file before references named their methods
        "algorithm": "aes-256-gcm", "encrypt": {"us_per_call": 1.3, "ci": [1.2, 1.4]},
        "decrypt": {"us_per_call": 0.8, "ci": [0.7, 0.9]}}
    costs = _costs(doc)
    assert set(costs) == {("client-gcm", "read")}
    e = costs[("client-gcm", "read")]
    assert (e["side"], e["metric"]) == ("client", "client_cpu_us_per_row")
    assert e["added_us_per_row"] == pytest.approx(3.0) and e["times_raw"] == pytest.approx(3.0 / 0.8)


def test_a_run_without_references_still_gives_its_per_row_figures():
    runs = [_run("none", {"insert": 20.0}), _run("pg-aes", {"insert": 25.0})]
    doc = {"engine": ENGINE, "runs": runs}
    e = _costs(doc)[("pg-aes", "insert")]
    assert e["cpu_us_per_row"] == 25.0 and "raw_us_per_value" not in e and "raw_cipher_flag" not in e
    assert columncost.lines(None) == [] and columncost.lines([]) == []


# -- computed once, by analyze(): Analysis.column_costs (show --json), the report's section, the headline ----------

def _pgp_runs(n: int, insert: float = 420.0, read: float = 405.0) -> list[dict]:
    runs = [_run("none", {"insert": 20 + _jitter(i), "read": 5 + _jitter(i)}) for i in range(n)]
    return runs + [_run("pg-pgp", {"insert": insert + _jitter(i), "read": read + _jitter(i)}) for i in range(n)]


def test_analyze_fills_column_costs_in_show_json_and_the_result_file():
    doc = _doc(_pgp_runs(3))
    a = an.analyze(doc)
    assert a.version == an.ANALYSIS_VERSION == 6
    assert a.column_costs == columncost.column_costs(doc, an.collect(doc), an.baseline_for)
    assert [(e["method"], e["operation"]) for e in a.column_costs] == [("pg-pgp", "insert"), ("pg-pgp", "read")]
    shown = a.to_dict()
    assert list(shown)[-2:] == ["column_costs", "headline"] and shown["column_costs"] is a.column_costs
    assert "column_costs" in a.stored() and an.Analysis.from_dict(shown) == a
    assert an.Analysis.from_doc({**doc, **a.stored()}).column_costs == a.column_costs  # what `run` reads back
    none_only = an.analyze(_doc([_run("none", {"insert": 20.0})]))  # no method but none: the field is absent
    assert none_only.column_costs is None and "column_costs" not in none_only.to_dict()


def test_the_report_reads_column_costs_from_the_analysis_not_from_the_runs():
    from encbench.report import render

    doc = _doc(_pgp_runs(3))
    a = an.analyze(doc)
    (section,) = [s for s in render.SECTIONS if s[1] == "Column encryption per row vs the raw cipher"]
    assert section[2](doc, a) == columncost.lines(a.column_costs)
    a.column_costs = [dict(a.column_costs[0], cpu_us_per_row=999.0)]  # the figure shown is the field's
    assert "999 µs per row of server CPU" in section[2](doc, a)[0]
    a.column_costs = None
    assert section[2](doc, a) == []


def _column_line(doc: dict) -> list[dict]:
    return [line for line in an.analyze(doc).headline or [] if line["lab"] == "column"]


def test_headline_one_line_per_method_with_the_verdict_and_the_raw_cipher():
    (line,) = _column_line(_doc(_pgp_runs(6)))
    assert line["label"] == "column, pg-pgp" and line["metric"] == "cpu_s" and line["verdict"] == "costs"
    assert [(r["operation"], r["verdict"]) for r in line["rows"]] == [("insert", "costs"), ("read", "costs")]
    assert line["detail"] == ("column, pg-pgp: costs +400 µs server CPU per row [399, 401] to encrypt (insert), "
                            "2.4x its raw cipher (170 µs, 100% S2K (iterated SHA-1)); costs +400 µs per row "
                            "[399, 401] to decrypt (read), 2.4x its raw cipher (170 µs)")
    # the short line: each direction with its CI (issue 30 item 2), the raw multiples where they fit
    assert line["text"] == "column, pg-pgp: costs: +400 µs/row [399, 401] to encrypt; +400 µs/row [399, 401] to decrypt"
    (enc, dec) = line["figures"]
    assert (enc["direction"], enc["side"], dec["direction"]) == ("encrypt", "server", "decrypt")
    assert enc["value"] == pytest.approx(400) and enc["times_raw"] == pytest.approx(400 / 170)


def test_headline_says_too_few_runs_once_and_flags_a_figure_below_its_raw_cipher():
    (line,) = _column_line(_doc(_pgp_runs(3, insert=120.0)))  # +100 µs to encrypt: below the raw 170
    assert line["verdict"] == "too_few_runs" and line["detail"].count("too few runs") == 1
    assert line["text"] == "column, pg-pgp: not resolved: run longer, or --budget"  # the figures: in the detail
    assert line["detail"].startswith("column, pg-pgp: +100 µs server CPU per row [")
    assert "to encrypt (insert), below its raw cipher (170 µs, 100% S2K (iterated SHA-1)): contradicts" in line["detail"]
    assert line["detail"].endswith("2.4x its raw cipher (170 µs); too few runs for a verdict (3 per side, need 6)")
    assert line["figures"][0]["times_raw"] is None and line["figures"][0]["raw_cipher_standing"] == "contradicts"


def test_headline_client_method_on_its_client_side_and_no_line_without_a_method():
    runs = [_run("none", {"insert": 20.0, "read": 5.0}, client_us=3 + _jitter(i)) for i in range(6)]
    runs += [_run("client-gcm", {"insert": 20.0, "read": 5.0}, client_us=9 + _jitter(i)) for i in range(6)]
    (line,) = _column_line(_doc(runs))
    assert line["metric"] == "client_cpu_s" and {r["verdict"] for r in line["rows"]} == {"costs"}
    assert line["detail"].startswith("column, client-gcm: costs +6.0 µs client CPU per row [")
    assert "its raw cipher" not in line["detail"]  # no reference for it in this document: no multiple
    assert _column_line(_doc([_run("none", {"insert": 20.0})])) == []
