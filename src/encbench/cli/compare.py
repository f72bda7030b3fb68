"""`encbench compare`: the same workload/variant across two result files (B vs A), and the regression gate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import errors
from .common import add_margin_argument, console, margin_pct
from ..analysis import compare, gate
from ..lab import results
from ..report import junit, csvout
from ..report import compare as words


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--force", action="store_true", help="compare even if the environments differ")
    p.add_argument("--fail-if", action="append", default=[], metavar="COND",
                   help="regression gate, e.g. 'overhead>5%%' (the encryption overhead, B's against A's, each "
                        "row on its workload's verdict metric: CPU, server CPU, throughput...), 'elapsed_overhead>5%%'"
                        " or 'cpu_overhead>5%%' (that overhead on elapsed time or CPU), 'change>10%%' (the same "
                        "variant's verdict metric, beyond the noise floor), 'elapsed>10%%' or 'cpu>=10%%' (the same "
                        "variant's time), 'instructions>1%%' (--meter instructions; 25 when a file holds no counts): "
                        "exit 17 when a row is shown worse than that, 23 when none is but some cannot be resolved at "
                        "that limit (repeatable)")
    p.add_argument("--noise-floor", default=None, metavar="FILE",
                   help="the between-invocation noise floor written by `encbench selftest --save-floor FILE` "
                        "(default: a conservative ±25%% for absolute elapsed/CPU)")
    add_margin_argument(p)
    p.add_argument("--format", choices=("table", "markdown", "json", "csv"), default="table",
                   help="table (terminal), markdown (a ticket), json, or csv (one row per comparison; the gate's "
                        "lines then go to stderr)")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument("--junit", default=None, metavar="FILE",
                   help="also write the gate as JUnit XML: one test case per --fail-if condition per row "
                        "(failure: shown worse; error: not resolved at the limit), for CI test reports")


def cmd_compare(args) -> int:
    conditions = [gate.parse(c) for c in args.fail_if]  # a bad condition fails before the files are read
    if args.junit:
        _check_junit(args.junit, conditions)
    margin = margin_pct(args)
    floor = gate.load_floor(args.noise_floor) if args.noise_floor else None
    results.check_readable(args.a), results.check_readable(args.b)
    a, b = results.load(args.a), results.load(args.b)
    gate.require_counts(conditions, {args.a: a, args.b: b})  # no instruction counts: no run count can help (25)
    with results.reading(args.a, args.b):
        cmp = compare.build(a, b, args.a, args.b, force=args.force, margin_pct=margin, floor=floor,
                            conditions=conditions)
        fmt = "json" if args.json else args.format
        _render(cmp, fmt)
        if args.junit:
            junit.write(Path(args.junit), cmp.conditions, cmp.cases, args.a, args.b)
    if cmp.gate and fmt != "json":
        print(words.gate_text(words.gate_lines(cmp), fmt), file=sys.stderr if fmt == "csv" else sys.stdout)
    outcome = cmp.gate["outcome"] if cmp.gate else "passed"
    return {"failed": errors.EXIT_GATE, "not_resolved": errors.EXIT_GATE_UNRESOLVED}.get(outcome, 0)


def _check_junit(path: str, conditions: list) -> None:
    """--junit: only with a gate, and a writable path (checked before any file is read)."""
    if not conditions:
        raise errors.UsageError("--junit writes the gate's test cases: it needs --fail-if COND",
                                hint="e.g. --fail-if 'overhead>5%' --junit gate.xml")
    junit.check_writable(Path(path))


def _render(cmp: compare.Comparison, fmt: str) -> None:
    if fmt == "csv":
        print(csvout.compare_csv(cmp.out, cmp.path_a, cmp.path_b), end="")
    elif fmt == "table":
        words.render_table(cmp, console())
    else:
        print(words.render(cmp, fmt))
