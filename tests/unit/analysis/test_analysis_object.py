"""issue 13 item 4: one owner of the analysis. `analysis.summary.analyze(doc)` returns a typed, versioned
`Analysis`; its to_dict() is what `show --json` prints (pinned here against the golden file, byte for
byte, with the rendering as it was written before the object existed); the runner stores `stored()`
and `run` reads it back with `from_doc()`; no module outside the analysis re-lists its keys."""

from __future__ import annotations

import ast
import copy
import json
from dataclasses import fields
from pathlib import Path

import pytest

from encbench.analysis import stats
from encbench.analysis import summary as an
from encbench.report import render
from encbench.util.units import fmt_seconds

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

GOLDEN = TESTS / "golden" / "results-v1.json"
SRC = Path(an.__file__).resolve().parents[1]
OPTIONAL = ("scaling", "hash_costs", "profiles", "column_costs", "files", "placebo_comparisons")


def _show_json_as_it_was(doc: dict, a: dict) -> str:
    """report.render_json before the Analysis object (issue 13 item 4), word for word: the pin."""
    comps = [c if "verdict" in c and "ci90" in c else dict(c, **an.judged(c)) for c in a["comparisons"]]
    return json.dumps({
        "schema_version": doc["schema_version"], "status": doc["status"], "engine": doc["engine"]["name"],
        "summaries": a["summaries"], "comparisons": comps, "derived": a["derived"],
        "attribution": a.get("attribution", []), "notes": a["notes"],
        **{k: a[k] for k in ("scaling", "hash_costs", "profiles", "column_costs", "headline", "files",
                             "placebo_comparisons")
           if k in a},  # added since: headline (issue 14 item 1), column_costs (issue 16): absent here
    }, indent=1)


def test_fields_on_the_golden_file(doc, analysis):
    assert isinstance(analysis, an.Analysis)
    assert analysis.version == an.ANALYSIS_VERSION == 6  # 2: headline (issue 14 item 1); 3: column_costs (issue 16); 4: verdict_basis (issue 21); 5: instructions (issue 23); 6: centre, headline lead (issue 30)
    assert (analysis.schema_version, analysis.status, analysis.engine) == (1, "complete", "sqlite")
    # two workloads (scan-like, backup) and the connection open, 3 runs per variant (6 opens)
    assert len(analysis.summaries) == 172 and all(s["n"] == (6 if s["workload"] == "(open)" else 3)
                                                  for s in analysis.summaries)
    assert {c["workload"] for c in analysis.comparisons} == {"scan-like", "backup", "(open)"}
    assert all(not c.get("placebo") for c in analysis.comparisons)
    assert [d["workload"] for d in analysis.derived] == ["scan-like"]
    assert analysis.notes and all(isinstance(n, str) for n in analysis.notes)
    assert isinstance(analysis.attribution, list)
    # a SQLite at-rest file: no hash sweep, no placebo twins, nothing written beside it yet
    assert all(getattr(analysis, k) is None for k in OPTIONAL)
    assert analysis.margin_pct == stats.DEFAULT_MARGIN_PCT
    assert list(analysis) == ["schema_version", "status", "engine", "summaries", "comparisons", "derived",
                              "attribution", "notes", "headline"]


def test_to_dict_is_show_json_byte_for_byte(doc, analysis):
    a = copy.copy(analysis)
    a.files = []  # `show` always sets the files written beside the result (none for this file)
    old_view = dict(a.to_dict())
    assert json.dumps(a.to_dict(), indent=1) == _show_json_as_it_was(doc, old_view)
    assert render.render_json(doc, a) == _show_json_as_it_was(doc, old_view)
    assert list(a.to_dict())[-1] == "files" and "version" not in a.to_dict()


def test_show_json_command_prints_to_dict(doc, analysis, tmp_path, capsys):
    from encbench.cli import main

    path = tmp_path / "r.json"
    path.write_bytes(GOLDEN.read_bytes())
    assert main(["show", str(path), "--json"]) == 0
    printed = capsys.readouterr().out
    a = copy.copy(analysis)
    a.files = []
    assert printed == json.dumps(a.to_dict(), indent=1) + "\n"
    assert an.Analysis.from_dict(json.loads(printed)) == a  # and back


def test_round_trips(doc, analysis):
    assert an.Analysis.from_dict(json.loads(json.dumps(analysis.to_dict()))) == analysis
    assert an.Analysis.of(analysis) is analysis and an.Analysis.of(dict(analysis)) == analysis
    # what the runner stores in the file, read back as `run` does
    stored = analysis.stored()
    assert list(stored) == ["summaries", "comparisons", "derived", "attribution", "notes"]
    bare = {k: v for k, v in doc.items() if k not in stored}
    assert an.Analysis.from_doc({**bare, **stored}) == analysis
    # a file whose analysis failed (analysis_error): empty lists, as `run` printed before
    empty = an.Analysis.from_doc(bare)
    assert (empty.comparisons, empty.notes, empty.scaling) == ([], [], None)


def test_old_comparisons_are_judged_on_the_way_out(doc, analysis):
    old = dict(analysis, comparisons=doc["comparisons"])  # the older file's: no verdict fields
    shown = an.Analysis.of(old).to_dict()["comparisons"]
    assert all({"verdict", "verdict_text", "equivalence"} <= set(c) for c in shown)
    assert all("verdict" not in c for c in doc["comparisons"])  # the input is left as it was


def test_rejudged_keeps_the_intervals(analysis):
    wide = analysis.rejudged(10.0)
    assert wide.margin_pct == 10.0 and analysis.margin_pct == stats.DEFAULT_MARGIN_PCT
    assert [c["ci"] for c in wide.comparisons] == [c["ci"] for c in analysis.comparisons]
    assert wide.summaries is analysis.summaries


def _sweep_doc() -> dict:
    runs = []
    for k, thr in ((1, 100.0), (2, 180.0)):
        for i in range(3):
            for op, wall in (("hash", 1.0 * k), ("baseline", 0.1)):
                runs.append({"workload": "hash", "variant": {"function": "sha256", "sessions": str(k)},
                             "variant_label": f"function=sha256,sessions={k}", "warmup": False, "operations": [
                                 {"operation": op, "metrics": {"wall_s": wall * (1 + i / 100), "cpu_s": wall,
                                                               "client_cpu_s": 0.01},
                                  "extra": {"rows_per_s": thr * (1 + i / 100), "rows_hashed": 1000 * k}}]})
    runs.append({"workload": "hash", "variant": {"function": "sha256", "sessions": "2"}, "warmup": True,
                 "variant_label": "function=sha256,sessions=2",
                 "operations": [{"operation": "profile", "metrics": {}, "extra": {"profile_error": "no perf"}}]})
    return {"schema_version": 1, "status": "complete", "runs": runs,
            "environment": {"cpu": {"logical_cores": 2}, "os_cache": {}},
            "engine": {"name": "postgres", "axis": "sessions", "axis_baseline": "1", "variants": [],
                       "variant_keys": []},
            "workloads": {"hash": {"params": {"profile": True}}},
            "calibration": {"raw_hash": {"sha256": {"us_per_call": 0.1, "method": "m"}}}}


def test_a_hash_sweep_fills_its_optional_fields():
    a = an.analyze(_sweep_doc())
    assert [(e["operation"], e["sessions"]) for e in a.scaling] == [
        ("baseline", 1), ("baseline", 2), ("hash", 1), ("hash", 2)]
    assert [c["function"] for c in a.hash_costs] == ["sha256"]
    assert a.profiles == [{"workload": "hash", "function": "sha256", "sessions": 2, "error": "no perf"}]
    assert "CPU profile: no perf" in a.notes and a.placebo_comparisons is None
    assert list(a.to_dict())[-4:] == ["scaling", "hash_costs", "profiles", "headline"]
    assert list(a.stored())[-3:] == ["scaling", "hash_costs", "profiles"]
    a.files = ["x-scaling.png"]
    assert list(a.to_dict())[-5:] == ["scaling", "hash_costs", "profiles", "headline", "files"]
    assert "files" not in a.stored() and "headline" not in a.stored()  # made for the output, never stored
    assert an.Analysis.from_dict(a.to_dict()) == a


def test_the_mapping_view_is_read_only_and_follows_the_fields(analysis):
    assert analysis["comparisons"] is analysis.comparisons and analysis.get("scaling", []) == []
    with pytest.raises(KeyError):
        analysis["scaling"]
    with pytest.raises(KeyError):
        analysis["version"]
    with pytest.raises(TypeError):
        analysis["notes"] = []  # noqa: the object is changed through its fields only
    json_fields = [f.name for f in fields(an.Analysis) if f.metadata.get("part")]
    assert set(OPTIONAL) <= set(json_fields) and "version" not in json_fields


def _key_lists(tree: ast.AST, names: set[str]):
    """Tuples, lists and sets of string literals naming two or more analysis fields."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            words = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(words & names) >= 2:
                yield node.lineno


def test_no_module_re_lists_the_analysis_keys():
    """The keys of the analysis live in Analysis' fields: a consumer reads fields (or iterates the
    object), it never lists the key names again (the result file's schema spec checks the file)."""
    names = {f.name for f in fields(an.Analysis) if f.metadata.get("part") in (an.STORED, an.SHOWN)}
    owners = {SRC / "analysis" / "summary.py", SRC / "lab" / "resultschema.py"}
    found = [f"{p.relative_to(SRC)}:{line}" for p in sorted(SRC.rglob("*.py")) if p not in owners
             for line in _key_lists(ast.parse(p.read_text()), names)]
    assert found == []
    # the check finds what it is meant to find
    assert list(_key_lists(ast.parse('K = ("scaling", "hash_costs")'), names)) == [1]


def test_the_connection_open_note_is_per_variant(analysis):
    """issue 29 item 3: never one median over plain and SQLCipher opens ("all: 125.6 ms (median of 120)"); each
    variant's figure is the centre its comparisons (and the summary's connection line) rest on."""
    (note,) = [n for n in analysis.notes if n.startswith("connection open")]
    opens = [s for s in analysis.summaries if s["workload"] == "(open)" and s["metric"] == "wall_s"]
    assert len(opens) == 4  # encryption off / on, cache cold / warm
    for s in opens:
        assert f"{s['variant']}: {fmt_seconds(s['centre'])} ({s['n']} runs)" in note
    assert "all:" not in note and note.count(" runs)") == len(opens)
