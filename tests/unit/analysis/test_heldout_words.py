"""analysis/heldout.py: the held-out check's words per engine and setup, the shipped findings, and the line
`encbench estimate` prints beside every bill (issue 31)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from encbench import cli
from encbench.analysis import heldout

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "results-v1.json"


def _doc(**summary) -> dict:
    base = {"mixes": 2, "checked": 2, "median_abs_error_pct": 9.4, "median_ci_pct": [3.0, 14.2],
            "worst_abs_error_pct": 18.0, "worst_ci_pct": [11.0, 25.4], "within_15_pct": 1, "unresolved": 0}
    return {"version": 1, "date": "2026-11-28 12:00 UTC", "machine": {"cores": 2}, "quick": False,
            "load": {"other_load_cores_median": 1.8},
            "checks": [{"engine": "postgres", "setup": "fscrypt", "side": "at rest", "mixes": [],
                        "summary": {**base, **summary}}]}


def test_words_give_median_and_worst_with_their_intervals_and_the_machine():
    line = heldout.words("postgres", "fscrypt", _doc())
    assert line.startswith("held-out check (postgres, fscrypt): checked on 2 peer mixes it never saw: ")
    assert "median |error| 9% [3, 14], worst 18% [11, 25]" in line
    assert "2 cores" in line and "1.8 cores of other load" in line and "2026-11-28" in line


def test_an_engine_or_setup_never_checked_says_so():
    assert heldout.words("postgres", "tls", _doc()) == "held-out check (postgres, tls): not checked on this engine/setup"
    assert "not checked on this engine/setup" in heldout.words("mariadb", "encrypted tables", {"checks": []})


def test_mixes_that_did_not_resolve_are_said_not_hidden():
    line = heldout.words("postgres", "fscrypt", _doc(mixes=3, checked=2, unresolved=1))
    assert "checked on 2 peer mixes" in line and "1 more not resolved" in line
    none = heldout.words("postgres", "fscrypt", _doc(checked=0, unresolved=2))
    assert "none with an error figure" in none and "%" not in none.split("(")[1].split(")")[0]


def test_a_quick_smoke_run_is_marked_as_no_figure():
    assert "a --quick smoke run, not a figure" in heldout.words("postgres", "fscrypt", {**_doc(), "quick": True})


def test_beside_bill_gives_one_line_per_side_billed():
    text = heldout.beside_bill("postgres", {"at rest", "in transit"}, _doc())
    lines = text.splitlines()
    assert len(lines) == 2 and "(postgres, fscrypt): checked" in lines[0] and "(postgres, tls): not checked" in lines[1]
    assert heldout.beside_bill("sqlite", set(), {"checks": []}).startswith("held-out check (sqlite, sqlcipher)")


def test_unreadable_findings_are_none_not_an_error():
    assert heldout.load("not json") is None and heldout.load('{"checks": 3}') is None


def test_the_shipped_findings_parse_and_name_every_engine():
    doc = heldout.load()
    assert doc is not None, "src/encbench/data/heldout.json is missing or does not parse"
    assert {c["engine"] for c in doc["checks"]} == {"sqlite", "mariadb", "postgres"}
    assert not doc["quick"] and doc["machine"]["cores"] and doc["load"]
    for c in doc["checks"]:
        s = c["summary"]
        assert s["mixes"] == len(c["mixes"]) and s["checked"] + s.get("unresolved", 0) == s["mixes"]


def test_estimate_prints_the_check_beside_the_bill(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # a wide pipe: each line whole
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["estimate", "--from", str(GOLDEN), "--read-rate", "25MB/s"])
    assert code in (0, 24)
    assert "held-out check (" in out.getvalue().splitlines()[-1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["estimate", "--from", str(GOLDEN), "--read-rate", "25MB/s", "--json"])
    assert json.loads(out.getvalue())["heldout"].startswith("held-out check (")


def test_findings_of_an_earlier_model_say_so_beside_the_bill():
    """Findings made before the bill's model changed (calibration version 1: one message cost, fscrypt on the
    server's CPU only) are still printed, dated, but say they checked an earlier model and how to check this one."""
    from encbench.analysis.calibration import VERSION

    old = heldout.words("postgres", "fscrypt", _doc())  # no calibration_version: the first model's findings
    assert f"of an earlier model (calibration version 1; this bill's is {VERSION})" in old
    assert "re-run bench/estimate_heldout.py" in old
    assert "earlier model" not in heldout.words("postgres", "fscrypt", {**_doc(), "calibration_version": VERSION})
