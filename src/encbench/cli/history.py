"""`encbench history`: the runs a history store keeps and the trend of one figure over time; and
`--store URL`, the option of run, tls-scan and leak-check that records what they measured."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from .. import errors
from .common import workloads
from ..history import Store, parse_url, run_entry, save, trend, page
from ..util.redact import command_line
from ..history.store import holds_something
from ..util.units import parse_positive_int
from ..lab import results
from ..analysis.summary import Analysis
from ..history.page import fmt_ci, fmt_value, series_title
from ..util.files import check_writable, replace_atomic

STORE_HELP = ("history store: postgresql://user@host/db, sqlite:///path.db, a file path, or 'default' "
              "($XDG_DATA_HOME/encbench/history.db)")
DEFAULT_LIMIT = 20


def add_store_argument(p: argparse.ArgumentParser) -> None:
    """--store URL on a measuring command: record what was measured (after the result is written)."""
    p.add_argument("--store", default=None, metavar="URL",
                   help="record what was measured in a history store (see `encbench history`): " + STORE_HELP)


def check_store(args, argv: list[str] | None = None) -> None:
    """--store's value checked before anything is measured (a malformed URL: exit 4; an existing SQLite
    store that is no store or of a newer schema: 21/22); the command line kept (redacted) for the record."""
    if getattr(args, "store", None):
        args.store_url = parse_url(args.store)
        Store.preflight(args.store_url)  # an existing SQLite store of a newer schema: refused before measuring
        args.store_command = command_line(argv) if argv is not None else None


def record(args, entry: Callable[[], object], result_file: str | None = None) -> int | None:
    """Record entry() in --store's history store, if given; the run's id. A store that fails raises
    StoreUnavailableError (exit 21): the caller has written its result (result_file) before calling this."""
    if not getattr(args, "store", None):
        return None

    url = getattr(args, "store_url", None) or parse_url(args.store)
    try:
        run_id = save(url, entry())
    except errors.StoreUnavailableError as e:
        if result_file:
            e.hint = (e.hint + "; " if e.hint else "") + (f"the results are kept in {result_file}: "
                                                          f"encbench history --record {result_file} --store URL")
        raise
    print(f"recorded in the history store {url.label} (run {run_id}; encbench history --store ...)", file=sys.stderr)
    return run_id


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, metavar="URL", help=STORE_HELP + "; default: 'default'")
    p.add_argument("--target", default=None, metavar="T",
                   help="only runs whose target contains T (a DSN, host:port, 'postgres (private)'...)")
    p.add_argument("--metric", default=None, metavar="M",
                   help="the figure whose trend is shown: a compared metric of `run` (default wall_s: elapsed; "
                        "cpu_s, qps, mb_per_s, connections_per_s...), suites or protocols (tls-scan), "
                        "findings (leak-check)")
    p.add_argument("--workload", default=None, metavar="W[,W]",
                   help="only this workload's figures (e.g. storm), or these workloads' (storm,bulk)")
    p.add_argument("--kind", default=None, choices=("run", "tls-scan", "leak-check"), help="list only these runs")
    p.add_argument("--limit", default=str(DEFAULT_LIMIT), metavar="N",
                   help=f"list the last N runs (default {DEFAULT_LIMIT}; the trend shows every point)")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="record an existing result file of `encbench run` in the store (e.g. after the store "
                        "was unreachable when it ran)")
    p.add_argument("--json", action="store_true", help="print runs and trend as JSON")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write one self-contained HTML page: the trend plotted over time (95%% CIs) and the runs")


def cmd_history(args) -> int:
    url = parse_url(args.store)
    limit = parse_positive_int(args.limit, what="--limit", maximum=1_000_000)
    source = trend.source(args.metric)  # an unknown figure: exit 3 before the store is opened
    chosen = workloads(args.workload) or None
    if args.html:
        check_writable(Path(args.html), what="the HTML page", hint="choose a writable file for --html")
    if args.record:
        _record_file(args, url)
    store = Store.open(url, create=False)  # read only: nothing created, migrated or written
    if store is None and holds_something(url):
        raise errors.StoreUnavailableError(f"history store {url.label} is not an encbench history store (an empty file, "
                                           f"or a database without encbench's tables); history writes nothing to it",
                                           hint="record a run in it with --store first, or give the store's path")
    if store is None:
        runs, found, version = [], {"metric": args.metric or trend.DEFAULT_METRIC,
                                    "description": source.description, "series": []}, None
    else:
        with store:
            runs = store.runs(target=args.target, kind=args.kind, limit=limit)
            found = trend.trend(store, args.metric, workload=chosen, target=args.target)
            version = store.version()
    for r in runs:
        r["summary"] = json.loads(r["summary"]) if r["summary"] else {}
        r["environment"] = json.loads(r["environment"]) if r["environment"] else {}
    if args.html:
        replace_atomic(Path(args.html), page.render(url.label, runs, found), what="the HTML page",
                               hint="choose a writable file for --html")
        print(f"history page written to {args.html}", file=sys.stderr)
    if args.json:
        print(json.dumps({"store": url.label, "schema_version": version, "runs": runs, "trend": found}, indent=1))
        return 0
    if store is None:
        print(f"no history yet in {url.label} (record runs with --store on run, tls-scan or leak-check)")
        return 0
    _print_runs(url.label, runs)
    _print_trend(found)
    return 0


def _record_file(args, url) -> None:
    doc = results.load(args.record)
    run_id = save(url, run_entry(doc, Analysis.from_doc(doc), result_file=str(args.record)))
    print(f"recorded {args.record} in the history store {url.label} (run {run_id})", file=sys.stderr)


def _print_runs(label: str, runs: list[dict]) -> None:
    print(f"history store {label}: {len(runs)} run(s) shown")
    print(f"  {'id':>5}  {'measured (UTC)':<20} {'kind':<10} {'engine':<9} {'exit':>4}  target")
    for r in runs:
        print(f"  {r['id']:>5}  {r['measured_at']:<20} {r['kind']:<10} {r['engine'] or '-':<9} "
              f"{'-' if r['exit_code'] is None else r['exit_code']:>4}  {r['target'] or '-'}")


def _print_trend(found: dict) -> None:
    print(f"trend of {found['metric']} ({found['description']}):")
    if not found["series"]:
        print("  nothing recorded for this figure (see --metric, --workload, --target)")
    ratio = found["series"] and isinstance(found["series"][0]["points"][0]["value"], float)
    for s in found["series"]:
        print(f"  {series_title(s)}")
        for p in s["points"]:
            print(f"    {p['time']:<20} run {p['run_id']:>4}  {fmt_value(p['value']):>10} {fmt_ci(p['ci']):<20} "
                  f"{p['verdict'] or '-'}")
    if ratio:
        print("  (values: contender vs baseline, e.g. +12.0% = 12% more than the baseline; 95% CI)")
