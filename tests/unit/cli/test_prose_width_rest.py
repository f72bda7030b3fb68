"""Issue 30 item 6, the rest of "every line fits COLUMNS": run's plan, progress and interrupted lines, calibrate's and
estimate's words (each term's figure, unit and CI on one line), selftest's, cleanup's and atrest's, wrapped at
spaces by util/columns (as test_prose_width.py checks run, show, advise, tls-scan and leak-check); and compare's CSV
names a rate's unit. Each check prints the lines at COLUMNS=100 and 80 and at a width no line reaches, and asks that
no line is over the width unless it is one unbreakable word, and that the words are the same."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from encbench.analysis import bill, calibration
from encbench.analysis.compare import compare
from encbench.cli import calibrate as calibrate_cli, cleanup as cleanup_cli, estimate as estimate_cli
from encbench.cli import run as run_cli, selftest as selftest_cli
from encbench.lab import precision, results
from encbench.report import atrest, bill as bill_words, csvout

from test_prose_width import GOLDEN, _too_wide, _words  # tests/unit/cli is on sys.path (no __init__.py)

WIDE = "1000"


def _printed(monkeypatch, capsys, width: str, say) -> list[str]:
    """The lines `say()` prints on stdout and stderr with COLUMNS=width (a pipe: capsys is no terminal)."""
    monkeypatch.setenv("COLUMNS", width)
    say()
    got = capsys.readouterr()
    return got.out.splitlines() + got.err.splitlines()


def _fits(monkeypatch, capsys, say, keep: tuple[str, ...] = ()) -> dict[int, list[str]]:
    """say()'s lines at 100 and 80 columns, each checked: within the width, the words of the whole lines."""
    whole = _printed(monkeypatch, capsys, WIDE, say)
    assert max(map(len, whole)) > 100, "the test's text must be wider than the pipe to show anything"
    out = {}
    for width in (100, 80):
        lines = _printed(monkeypatch, capsys, str(width), say)
        assert not _too_wide(lines, width, keep), _too_wide(lines, width, keep)
        assert _words(lines) == _words(whole)
        out[width] = lines
    return out


def test_run_plan_progress_and_interrupted_lines_fit(monkeypatch, capsys):
    planned = SimpleNamespace(by_workload={"roundtrip": [{"tls": "off"}, {"tls": "on"}],
                                           "storm": [{"tls": "off", "sslmode": "require"}, {"tls": "on"}]})
    config = SimpleNamespace(workloads=["roundtrip", "storm"], budget_s=180.0)
    eta = precision.estimate_text({"roundtrip": 12.3, "storm": 40.1}, {"roundtrip": 1}, precision.Sequential(), 150.0)

    def say():
        run_cli._print_plan(planned, 180.0)
        run_cli.PlainProgress(config, now=lambda: 5.0).update(eta, 3, 24)
        run_cli.PlainProgress(config, now=lambda: 5.0).update("roundtrip tls=on sslmode=verify-full", 3, 24)

    lines = _fits(monkeypatch, capsys, say)
    assert lines[80][0].startswith("encbench: plan: ") and lines[80][1].startswith("    ")


def test_run_interrupted_line_fits(monkeypatch, capsys, tmp_path):
    out = tmp_path / ("a-result-file-in-a-directory-with-a-long-name" * 2) / "postgres-20261128-153000.json"
    config = SimpleNamespace(output=out, budget_s=None, sequential=False)
    for name, fake in (("_run_config", lambda args, argv: config), ("check_store", lambda args: None),
                       ("check_writable", lambda *a, **k: None), ("_written", lambda *a: True)):
        monkeypatch.setattr(run_cli, name, fake)
    monkeypatch.setattr(run_cli.runner, "plan", lambda c: None)
    monkeypatch.setattr(run_cli.prometheus, "check_path", lambda p: None)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_cli, "_run_with_progress", interrupted)
    args = SimpleNamespace(output=str(out), prometheus=None, progress="off")
    lines = _fits(monkeypatch, capsys, lambda: run_cli.cmd_run(args, []))
    assert lines[80][0] == "encbench: interrupted: results so far kept in"


def _bill() -> bill.Bill:
    reads = bill.term("reads", bill.UnitCost(14.2e-6, (12.9e-6, 15.5e-6), "calibration cal.json, fitted per page "
                                             "read from 3 mixes", 12), bill.Rate(412.0, "pg_stat_database blks_read"))
    hs = bill.term("tls_handshakes", bill.UnitCost(1.9e-3, (1.5e-3, 2.3e-3), "calibration cal.json", 12),
                   bill.Rate(35.0, "pg_stat_ssl, sampled for 10.0 s from the live server"))
    return bill.bill([reads, hs], 4, absent={"tls_resumptions": "the engine never resumes a TLS session"})


def test_estimate_bill_fits_and_keeps_each_figure_with_its_unit_and_ci(monkeypatch, capsys):
    b = _bill()
    out = {"model": "model: the CPU encryption adds, as page reads, TLS handshakes (measured unit costs x this "
                    "server's rates); it leaves out page writes, log bytes, temporary bytes (no rate given)",
           "target": "postgres 15, 8 KB pages, fscrypt AES-256-XTS, 4 cores", "checks": [],
           "heldout": "held-out check of this model on mixes it was not fitted on: error -21% [-35, -8] (select-only), "
                      "-47% [-60, -30] (tpcb-like)"}
    lines = _fits(monkeypatch, capsys, lambda: estimate_cli._print_bill(out, b, None))
    for width, shown in lines.items():
        for figure in bill_words.figures(b):
            assert any(figure in x for x in shown), (width, figure)
    assert len(bill_words.figures(b)) == 6  # two costs, two shares, the total in cores and as a share


def test_calibrate_lines_fit_and_keep_each_cost_with_its_unit_and_ci(monkeypatch, capsys, tmp_path):
    sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
    from test_calibration import _transit_doc

    doc = calibration.build("postgres", {"page_size": None, "cipher": None},
                            {"in_transit": (_transit_doc(), tmp_path / "t.json")},
                            refused={"at_rest": "--dsn: the at-rest mixes need a private server"})
    path = tmp_path / ("calibrate-postgres-" + "x" * 40 + ".json")
    side = SimpleNamespace(workloads=["connect", "bulk", "roundtrip"],
                           variant_filters=["tls=off,on", "sslmode=require"], runs=6,
                           output=tmp_path / "calibrate-postgres.in-transit.json")
    monkeypatch.setattr(calibrate_cli, "_engine", lambda args: SimpleNamespace(name="postgres"))
    monkeypatch.setattr(calibrate_cli, "_plan", lambda args, engine, argv: (path, {"in_transit": side}))
    monkeypatch.setattr(calibrate_cli, "_setup", lambda docs: {})
    monkeypatch.setattr(calibrate_cli.runner, "execute", lambda config: {})
    monkeypatch.setattr(calibrate_cli.calibration, "build", lambda *a, **k: doc)
    args = SimpleNamespace(dsn="postgresql://bench@db-replica-eu-west-1.internal.example.com/bench", json=False)
    lines = _fits(monkeypatch, capsys, lambda: calibrate_cli.cmd_calibrate(args, []))
    assert calibration.figures(doc) and all(any(f in x for x in lines[80]) for f in calibration.figures(doc))


def test_selftest_lines_fit(monkeypatch, capsys, tmp_path):
    floor = tmp_path / "noise-floors" / "sqlite-selftest-floor-of-this-machine.json"
    floor.parent.mkdir()
    monkeypatch.setattr(selftest_cli.selftest, "lines", lambda r: [
        "encbench selftest: sqlite scan, point, 50 MB, 6 runs + 1 warmup per variant, placebo twins a/b; two "
        "invocations of 41 s and 43 s",
        "  same variant, elapsed: changes from 3.1% are told from noise (caught 4 times in 5 from 4.2%); drift beyond "
        "the runs' scatter 1.2% (floor_pct); common shift +0.4%, largest +2.9% (scan cold)"])

    def run(settings, progress):
        progress("invocation 1 of 2: sqlite scan, point, 6 runs per variant, 50 MB; invocation 2 of 2 follows with "
                 "the same data")
        return {"passed": True, "floor_file": {}}

    monkeypatch.setattr(selftest_cli.selftest, "run", run)
    monkeypatch.setattr(selftest_cli.selftest, "save_floor", lambda path, floor: None)
    monkeypatch.setattr(selftest_cli.runner, "plan", lambda c: None)
    args = SimpleNamespace(engine=None, workload=[], runs=None, warmups="1", size=None, data_dir=str(tmp_path),
                           keep_results=None, meter="time", json=False, save_floor=str(floor))
    lines = _fits(monkeypatch, capsys, lambda: selftest_cli.cmd_selftest(args, []),
                  keep=(f"(encbench compare A B --noise-floor {floor})",))
    assert f"    (encbench compare A B --noise-floor {floor})" in lines[80]  # the command whole


def test_cleanup_lines_fit(monkeypatch, capsys, tmp_path):
    long_dir = "/var/lib/encbench/data/.servers/postgres-private-server-of-a-run-that-was-killed-20261128"
    rows = {"servers": [{"dir": long_dir, "owner_pid": 41234, "stopped": [41240, 41241], "removed": False,
                         "problems": ["the data directory is still mounted (fscrypt) and busy: umount it first",
                                      "a postmaster.pid names a process that is alive"]}],
            "directories": [(Path(long_dir + "-scratch"), 41234)], "memory_cgroups": [], "filesystems": [],
            "owners": []}
    monkeypatch.setattr(cleanup_cli.reclaim, "reclaim", lambda d: SimpleNamespace(rows=rows))
    monkeypatch.setattr(cleanup_cli.ledger, "records", lambda: [])

    def say():
        with pytest.raises(cleanup_cli.FilesystemUnavailableError):
            cleanup_cli.cmd_cleanup(SimpleNamespace(data_dir=str(tmp_path), json=False, forget_journal=None))

    _fits(monkeypatch, capsys, say)


def test_atrest_header_and_notes_fit(monkeypatch):
    golden = results.load(GOLDEN / "results-v1.json")
    report = atrest.build([("/results/of/a/long/directory/sqlite-at-rest-default-20261128.json", golden),
                           ("/results/of/a/long/directory/sqlite-at-rest-second-run-20261128.json", golden)])

    def shown(width: int) -> list[str]:
        console = Console(file=io.StringIO(), width=width, color_system=None)
        atrest.render_text(report, console)
        lines = console.file.getvalue().splitlines()
        title = next(i for i, x in enumerate(lines) if x.strip() == "Which at-rest option costs least")
        return lines[:title] + lines[lines.index("Notes"):]  # the header's lines and the notes (the table: rich's)

    whole = shown(10_000)
    assert max(map(len, whole)) > 100
    for width in (100, 80):
        lines = shown(width)
        assert not _too_wide(lines, width), _too_wide(lines, width)
        assert _words(lines) == _words(whole)
        notes = lines[lines.index("Notes") + 1:]
        assert all(x.startswith(("  - ", "    ")) for x in notes), notes  # an item's next lines under its text


def test_compare_csv_names_a_rate_unit():
    doc = json.loads((GOLDEN / "postgres-tls.json").read_text())
    out = compare(doc, doc)
    rows = list(csv.DictReader(io.StringIO(csvout.compare_csv(out, "a.json", "b.json"))))
    rates = [r for r in rows if r["metric"] in ("qps", "tps")]
    assert rates, sorted({r["metric"] for r in rows})
    assert all(r["unit"] == {"qps": "q/s", "tps": "txn/s"}[r["metric"]] for r in rates), rates
