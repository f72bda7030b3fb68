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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--force", action="store_true", help="compare even if the environments differ")
    p.add_argument("--fail-if", action="append", default=[], metavar="COND",
                   help="regression gate, e.g. 'overhead>5%%' (the encryption overhead, B's against A's), "
                        "'elapsed>10%%' or 'cpu>=10%%' (the same variant's time, beyond the noise floor), "
                        "'instructions>1%%' (--meter instructions; 24 when a file holds no counts): exit 17 when a "
                        "row is shown worse than that, 23 when none is but some cannot be resolved at that limit "
                        "(repeatable)")
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
    gate.require_counts(conditions, {args.a: a, args.b: b})  # no instruction counts: no run count can help (24)
    with results.reading(args.a, args.b):
        out = compare.compare(a, b, force=args.force, margin_pct=margin, floor=floor)
        verdict = gate.evaluate(conditions, out["comparisons"]) if conditions else None
        if verdict:
            verdict["conditions"] = [c.text for c in conditions]
            verdict["nothing_judged"] = verdict["checked"] == 0
            out["gate"] = verdict
        fmt = "json" if args.json else args.format
        _render(out, fmt, args)
        if args.junit:
            junit.write(Path(args.junit), conditions, out["comparisons"], args.a, args.b)
    if verdict and fmt != "json":
        _print_gate(_gate_lines(verdict, conditions), fmt)
    outcome = verdict["outcome"] if verdict else "passed"
    return {"failed": errors.EXIT_GATE, "not_resolved": errors.EXIT_GATE_UNRESOLVED}.get(outcome, 0)


def _check_junit(path: str, conditions: list) -> None:
    """--junit: only with a gate, and a writable path (checked before any file is read)."""
    if not conditions:
        raise errors.UsageError("--junit writes the gate's test cases: it needs --fail-if COND",
                                hint="e.g. --fail-if 'overhead>5%' --junit gate.xml")
    junit.check_writable(Path(path))


def _render(out: dict, fmt: str, args) -> None:
    if fmt == "csv":
        print(csvout.compare_csv(out, args.a, args.b), end="")
    elif fmt == "table":
        compare.render_table(out, args.a, args.b, console())
    else:
        print(compare.render(out, fmt, args.a, args.b))


SHOWN_UNRESOLVED = 8  # not-resolved rows printed one a line; the rest counted


def _gate_lines(verdict: dict, conditions: list) -> list[str]:
    """OVER rows first, then the not-resolved ones (with the runs that would resolve them), the within count,
    and the outcome: FAILED (exit 17), NOT RESOLVED (exit 23) or passed."""
    lines = [f"FAIL  {line}" for line in verdict["failed"]]
    unresolved = verdict["not_resolved"]
    lines += [f"NOT RESOLVED  {line}" for line in unresolved[:SHOWN_UNRESOLVED]]
    if len(unresolved) > SHOWN_UNRESOLVED:
        lines.append(f"NOT RESOLVED  ... and {len(unresolved) - SHOWN_UNRESOLVED} more (--json lists every one)")
    if verdict["within"]:
        lines.append(f"within the limit: {len(verdict['within'])} comparisons")
    need = f"; about {verdict['runs_needed']} runs per side would resolve the widest" if verdict["runs_needed"] else ""
    state = {"failed": "FAILED",
             "not_resolved": (f"NOT RESOLVED: {len(unresolved)} of {len(unresolved) + len(verdict['within'])} "
                              f"comparisons could not be shown within or over the limit{need}"
                              + (" (nothing could be judged: use more runs)" if verdict["nothing_judged"] else "")),
             }.get(verdict["outcome"], "passed")
    lines.append(f"gate: {state} ({', '.join(c.text for c in conditions)}; {verdict['checked']} comparisons checked, "
                 f"{verdict['method']})")
    return lines


def _print_gate(lines: list[str], fmt: str) -> None:
    """The gate's lines after the table; a Markdown section of their own; on stderr beside CSV (one document)."""
    if fmt == "markdown":
        print("\n## Gate\n\n" + "\n".join(f"- {line}" for line in lines))
    else:
        for line in lines:
            print(line, file=sys.stderr if fmt == "csv" else sys.stdout)
