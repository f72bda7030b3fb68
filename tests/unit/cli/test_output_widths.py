"""Issue 30 item 6: every table of `show`, `compare`, `tls-scan` and `leak-check` fits COLUMNS (100 in a pipe when
COLUMNS does not say): the renderers at 100 and 80 columns, on the golden file and on fabricated scans and postures
with the longest names these commands print. The prose lines are wrapped to the same width, in a pipe too
(test_prose_width.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.cells import cell_len
from rich.console import Console

from encbench.analysis import compare, summary as an
from encbench.cli import common, leakcheck, tlsscan
from encbench.report import compare as compare_words, render
from encbench.tls import fleet
from encbench.tls.scan import Endpoint
from encbench.util import columns

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "results-v1.json"
BOX = "┏┃┡│└┗┣┠"  # the first character of a rich table's lines
SUITES = ("TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384", "TLSv1.2:ECDHE-RSA-CHACHA20-POLY1305", "TLSv1.3:TLS_AES_256_GCM_SHA384",
          "TLSv1.3:TLS_CHACHA20_POLY1305_SHA256", "TLSv1.2:AES256-SHA")


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def _rich(width: int, draw) -> list[str]:
    console = Console(record=True, width=width, file=open("/dev/null", "w"))  # noqa: SIM115
    draw(console)
    console.file.close()
    return console.export_text().splitlines()


def _table_lines(lines: list[str]) -> list[str]:
    return [x for x in lines if x[:1] in BOX]


@pytest.mark.parametrize("width", [100, 80])
def test_compare_table_fits(golden, width):
    out = compare.compare(golden, golden)
    lines = _rich(width, lambda c: compare_words.render_table(compare.of(out, "a.json", "b.json"), c))
    table = _table_lines(lines)
    assert table and all(cell_len(x) <= width for x in table), max(table, key=cell_len)
    if width == 100:  # one line per comparison at 100 columns: nothing wraps
        assert sum(x.startswith("│") for x in table) == len(out["comparisons"])


def test_compare_table_was_two_hundred_columns_wide(golden):
    """The cells that made it so: every variant's full label and the verdict's whole sentence (now in markdown)."""
    out = compare.compare(golden, golden)
    cells = [c for r in out["comparisons"] for c in (r["variant"], r["verdict_text"])]
    shown = "\n".join(_rich(100, lambda c: compare_words.render_table(compare.of(out, "a.json", "b.json"), c)))
    assert not any(c in shown for c in cells if len(c) > 30)
    assert "encryption, cache" in shown  # the keys the variants differ in, named once


@pytest.mark.parametrize("width", [100, 80])
def test_show_table_fits(golden, width):
    lines = _rich(width, lambda c: render.render_text(golden, an.analyze(golden), c))
    table = _table_lines(lines)
    assert table and all(cell_len(x) <= width for x in table)


@pytest.mark.parametrize("width", [100, 80])
def test_pipe_width_is_columns_else_100(monkeypatch, width):
    monkeypatch.setattr("sys.stdout.isatty", lambda: False, raising=False)
    monkeypatch.setenv("COLUMNS", str(width))
    assert common.console().width == width == columns.output_width()
    monkeypatch.delenv("COLUMNS")
    assert common.console().width == 100 == columns.output_width()
    monkeypatch.setenv("COLUMNS", "wide")
    assert common.console().width == 100


def _cell(ratio, ci):
    return {"ratio": ratio, "ci": ci}


@pytest.mark.parametrize("width", [100, 80])
def test_tls_scan_ranking_fits(monkeypatch, capsys, width):
    monkeypatch.setenv("COLUMNS", str(width))
    ranking = [{"tls": s, "grade": "A", "storm elapsed": _cell(1.412, [1.301, 1.55]), "bulk MB/s": _cell(0.71, [0.62, 0.8]),
                "connections/s": _cell(0.262, [0.24, 0.281])} for s in SUITES]
    m = {"runs": 6, "note": "n", "result_file": "r.json", "ranking": ranking, "recommendation": None,
         "groups": [{"tls": "X25519MLKEM768", "connections/s": _cell(0.25, [0.2, 0.3])}], "groups_result_file": "g"}
    tlsscan._print_tls_ranking(m)
    lines = capsys.readouterr().out.splitlines()[1:]  # after the line that names the result file
    assert all(len(x) <= width for x in lines), lines
    assert sum(s in "\n".join(lines) for s in SUITES) == len(SUITES) or width < 100


@pytest.mark.parametrize("width", [100, 80])
def test_leak_check_posture_fits(monkeypatch, capsys, width):
    monkeypatch.setenv("COLUMNS", str(width))
    fix = ("SET GLOBAL innodb_encrypt_tables=ON with file_key_management loaded and a key file the server reads at "
           "start (restart)")
    items = [SimpleNamespace(plaintext=True, what="InnoDB tablespaces", state="innodb_encrypt_tables=OFF", fix=fix),
             SimpleNamespace(plaintext=False, what="redo log", state="innodb_encrypt_log=ON", fix="")]
    leakcheck._print_posture(SimpleNamespace(engine="mariadb", target="127.0.0.1:3306", plaintext=True, items=items,
                                             notes=[]))
    lines = capsys.readouterr().out.splitlines()[1:]
    assert all(len(x) <= width for x in lines), lines
    assert " ".join(" ".join(lines).split()).count(fix) == 1  # the fix whole, wrapped at its spaces


@pytest.mark.parametrize("width", [100, 80])
def test_fleet_tables_fit(monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    target = fleet.Target(1, Endpoint("postgres", "db-replica-eu-west-1.internal.example.com", 5432))
    scan = {"protocols": ["TLSv1.2", "TLSv1.3"], "suites": {"TLSv1.2": [{"name": s, "grade": "C"} for s in SUITES]}}
    outs = [fleet.Outcome(target, exit_code=14, scan=scan, status="drift", drift=[f"suite added: {s}" for s in SUITES])]
    table = fleet.table_lines(outs)[:2]  # the header and the row; the drift lines after it are prose
    assert all(len(x) <= width for x in table), table
    report = SimpleNamespace(items=[SimpleNamespace(plaintext=True, what="data files", state="plain ext4", fix="")],
                             plaintext=True)
    posture = leakcheck.posture_table([leakcheck.PostureOutcome(SimpleNamespace(label=target.label, line=1,
                                                                                engine=SimpleNamespace(name="postgres")),
                                                                report=report)])[:2]
    assert all(len(x) <= width for x in posture), posture


def test_fit_wraps_the_last_cell_under_its_column():
    rows = [("a", "bb", "word " * 30), ("ccc", "d", "short")]
    lines = columns.fit(rows, 40)
    assert all(len(x) <= 40 for x in lines)
    assert lines[0].startswith("a    bb  word") and lines[1].startswith(" " * 9 + "word")
    assert lines[-1] == "ccc  d   short"
    narrow = columns.fit([("x" * 30, "long text " * 5)], 40)  # the columns leave it under 20: lines of its own
    assert narrow[0] == "x" * 30 and all(x.startswith("    ") for x in narrow[1:]) and all(len(x) <= 40 for x in narrow)


def _roundtrip_doc() -> dict:
    """A PostgreSQL roundtrip run with clients 1 and 2: the compact table that wrapped its throughput at 100."""
    from encbench.workloads import WORKLOADS

    runs, variants = [], []
    for tls in ("off", "on", "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384"):  # several contenders: each named (tls#1)
        for clients, qps in (("1", 2100.0), ("2", 7645.0)):
            variants.append({"tls": tls, "clients": clients})
            for i in range(6):
                q = qps * (1.0 if tls == "off" else 1.1) * (1 + 0.01 * (i % 5))
                runs.append({"workload": "roundtrip", "variant": variants[-1], "variant_label": f"tls={tls},clients={clients}",
                             "warmup": False, "operations": [{"operation": "select-by-pk",
                                                               "metrics": {"wall_s": 1.0, "cpu_s": 0.5 * (1 + 0.01 * i)},
                                                               "extra": {"queries": int(q), "qps": q}}]})
    return {"runs": runs, "environment": {"cpu": {"logical_cores": 2, "model": "test", "flags": {}}, "kernel": "x"},
            "engine": {"name": "postgres", "axis": "tls", "axis_baseline": "off", "variants": variants,
                       "variant_keys": [{"name": "tls", "applies_when": []}, {"name": "clients", "applies_when": []}],
                       "table_columns": ["workload", "op", "variant", "server_cpu", "d_server_cpu", "server_per_unit",
                                         "d_server_per_unit", "rate", "d_rate", "verdict"],
                       "metric_words": {"cpu_s": "server CPU"}},
            "workloads": {"roundtrip": WORKLOADS.get("roundtrip").describe()},
            "config": {"command": None, "size_bytes": 0}, "encbench_version": "test", "status": "complete",
            "schema_version": 1}


def test_a_throughput_table_fits_100_columns_one_line_a_row():
    """show of a real PostgreSQL --quick run wrapped its roundtrip rows at 100 ('7,645 q/s → 9,306 q/s'): the means
    now share their unit, as the times do."""
    doc = _roundtrip_doc()
    a = an.analyze(doc)
    rows = [r for _, shown in render._shown_tables(doc, a) for r in shown]
    lines = _table_lines(_rich(100, lambda c: render.render_text(doc, a, c)))
    assert all(cell_len(x) <= 100 for x in lines)
    assert sum(x.startswith("│") for x in lines) == len(rows) == 4, lines
    assert all(x.count("q/s") == 1 and "→" in x for x in lines if x.startswith("│")), lines
