"""issue 15 item 4: the cross-engine at-rest table (report/atrest.py) on the golden file and modified
copies of it (another engine's name, a contender made slower, a file without an encrypted variant);
no engine runs here (tests/integration/test_maria_encfs.py builds the table from two real runs)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from encbench.errors import IncomparableError
from encbench.lab import results
from encbench.report import atrest

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")
GOLDEN = TESTS / "golden" / "results-v1.json"


@pytest.fixture(scope="module")
def golden() -> dict:
    return results.load(GOLDEN)


def _as_engine(doc: dict, engine: str, scale_contender: float = 1.0) -> dict:
    """A copy of `doc` that says it comes from `engine`, its encrypted runs' elapsed times multiplied."""
    out = copy.deepcopy(doc)
    out["engine"]["name"] = engine
    for run in out["runs"]:
        if run["variant"].get("encryption") == "on":
            for op in run.get("operations") or []:
                op["metrics"]["wall_s"] *= scale_contender
    return out


def _row(report: dict, workload: str, cache: str) -> dict:
    return next(r for r in report["rows"] if (r["workload"], r["cache"]) == (workload, cache))


def test_each_option_is_its_own_files_ratio_as_the_analysis_has_it(golden):
    from encbench.analysis import summary as an

    report = atrest.build([("a.json", golden)])
    assert [o["name"] for o in report["options"]] == ["SQLCipher"]
    comps = {(c["workload"], c["operation"], c["contender"]): c for c in an.analyze(golden).comparisons
             if c["metric"] == "wall_s"}
    cells = [(r, r["cells"]["SQLCipher"]) for r in report["rows"]]
    assert {(r["workload"], r["operation"]) for r, _ in cells} == {("scan-like", "scan"), ("backup", "to-file"),
                                                                    ("backup", "to-file+zstd")}
    for r, cell in cells:
        c = comps[(r["workload"], r["operation"], cell["contender"])]
        assert (cell["ratio"], cell["ci"], cell["verdict"]) == (c["ratio"], c["ci"], c["verdict"])
        assert r["outcome"] == "one option"


def test_a_clearly_costlier_option_is_ranked_after_and_the_cheapest_named(golden):
    slow = _as_engine(golden, "mariadb", scale_contender=20.0)
    report = atrest.build([("sqlite.json", golden), ("maria.json", slow)])
    assert [o["name"] for o in report["options"]] == ["SQLCipher", "InnoDB TDE"]
    row = _row(report, "scan-like", "cold")
    assert row["ranking"] == ["SQLCipher", "InnoDB TDE"]
    assert row["cells"]["InnoDB TDE"]["ratio"] == pytest.approx(20.0 * row["cells"]["SQLCipher"]["ratio"], rel=0.3)
    assert row["outcome"] == "cheapest" and row["cheapest"] == "SQLCipher", row


def test_overlapping_intervals_are_inconclusive_never_a_winner(golden):
    same = _as_engine(golden, "postgres")  # identical numbers: the intervals overlap entirely
    same["runs"] = [r for r in same["runs"] if r["variant"].get("encryption") != "on"] + [
        dict(r, variant=dict(r["variant"], encryption="fscrypt"),
             variant_label=r["variant_label"].replace("encryption=on", "encryption=fscrypt"))
        for r in same["runs"] if r["variant"].get("encryption") == "on"]
    same["engine"]["variants"] = [dict(v, encryption="fscrypt") if v.get("encryption") == "on" else v
                                  for v in same["engine"]["variants"]]
    report = atrest.build([("sqlite.json", golden), ("pg.json", same)])
    row = _row(report, "scan-like", "cold")
    assert set(row["cells"]) == {"SQLCipher", "PostgreSQL on fscrypt"}
    assert row["outcome"] == "inconclusive" and row["cheapest"] is None
    assert set(row["tied"]) == {"SQLCipher", "PostgreSQL on fscrypt"} and "inconclusive" in row["text"]
    assert any("fscrypt decrypts reads in kernel worker threads" in n for n in report["notes"])


def test_the_same_option_from_two_files_is_kept_apart(golden):
    report = atrest.build([("one.json", golden), ("two.json", golden)])
    assert [o["name"] for o in report["options"]] == ["SQLCipher", "SQLCipher [two.json]"]


def test_rank_rules():
    cheap = {"ratio": 1.1, "ci": [1.05, 1.15]}
    dear = {"ratio": 2.0, "ci": [1.8, 2.2]}
    near = {"ratio": 1.2, "ci": [1.12, 1.3]}
    assert atrest.rank({"B": dear, "A": cheap})["cheapest"] == "A"
    r = atrest.rank({"B": dear, "A": cheap, "C": near})
    assert (r["outcome"], r["tied"], r["ranking"]) == ("inconclusive", ["A", "C"], ["A", "C", "B"])
    assert atrest.rank({"A": {"ratio": 1.1, "ci": None}, "B": dear})["outcome"] == "inconclusive"
    assert atrest.rank({"A": cheap})["outcome"] == "one option"
    assert atrest.rank({"A": {"ratio": None, "ci": None}})["outcome"] == "no estimate"


def test_a_file_without_an_encrypted_variant_is_a_clear_error(golden):
    plain = copy.deepcopy(golden)
    plain["runs"] = [r for r in plain["runs"] if r["variant"].get("encryption") == "off"]
    with pytest.raises(IncomparableError, match="no at-rest comparison"):
        atrest.build([("g.json", golden), ("plain.json", plain)])


def test_markdown_and_json_carry_the_same_table(golden):
    slow = _as_engine(golden, "mariadb", scale_contender=20.0)
    report = atrest.build([("sqlite.json", golden), ("maria.json", slow)])
    assert json.loads(atrest.render_json(report)) == json.loads(json.dumps(report))
    tokens = MarkdownIt().enable("table").parse(atrest.render_markdown(report))
    headers = [t for t in tokens if t.type == "th_open"]
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(headers) == 3 + 2 + 1 and len(rows) == 1 + len(report["rows"])
