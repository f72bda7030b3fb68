"""`encbench compare`: the same workload/variant across two result files (B vs A), and the regression gate."""

from __future__ import annotations

import argparse

from .. import errors
from .common import console, margin_pct


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--force", action="store_true", help="compare even if the environments differ")
    p.add_argument("--fail-if", action="append", default=[], metavar="COND",
                   help="regression gate, e.g. 'overhead>5%%' (the encryption overhead, B's against A's), "
                        "'elapsed>10%%' or 'cpu>=10%%' (the same variant's time, beyond the noise floor): exit 17 "
                        "when B is shown to be worse than A by more than that (repeatable)")
    p.add_argument("--noise-floor", default=None, metavar="FILE",
                   help="the between-invocation noise floor written by `encbench selftest --save-floor FILE` "
                        "(default: a conservative ±25%% for absolute elapsed/CPU)")
    p.add_argument("--margin", default=None, metavar="PCT",
                   help="equivalence margin for 'no cost' verdicts, in percent (default 2: the 90%% CI within ±2%%)")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    p.add_argument("--json", action="store_true", help="same as --format json")


def cmd_compare(args) -> int:
    from ..analysis import compare
    from ..lab import results

    from ..analysis import gate

    conditions = [gate.parse(c) for c in args.fail_if]  # a bad condition fails before the files are read
    margin = margin_pct(args)
    floor = gate.load_floor(args.noise_floor) if args.noise_floor else None
    results.check_readable(args.a), results.check_readable(args.b)
    a, b = results.load(args.a), results.load(args.b)
    with results.reading(args.a, args.b):
        out = compare.compare(a, b, force=args.force, margin_pct=margin, floor=floor)
        verdict = gate.evaluate(conditions, out["comparisons"]) if conditions else None
        if verdict:
            verdict["conditions"] = [c.text for c in conditions]
            verdict["nothing_judged"] = verdict["checked"] == 0 and bool(verdict["not_judged"])
            out["gate"] = verdict
        fmt = "json" if args.json else args.format
        print(compare.render(out, fmt, args.a, args.b)) if fmt != "table" else compare.render_table(out, args.a, args.b, console())
    failed = bool(verdict and (verdict["failed"] or verdict["nothing_judged"]))
    if verdict and fmt != "json":
        for line in verdict["failed"]:
            print(f"FAIL  {line}")
        if verdict["not_judged"]:
            print(f"not judged: {len(verdict['not_judged'])} comparisons ({verdict['not_judged'][0]}"
                  + (", ..." if len(verdict["not_judged"]) > 1 else "") + ")")
        state = ("FAILED: nothing could be judged, so the build is not vouched for (use more runs)"
                 if verdict["nothing_judged"] else "FAILED" if verdict["failed"] else "passed")
        print(f"gate: {state} ({', '.join(c.text for c in conditions)}; {verdict['checked']} comparisons checked, "
              f"{verdict['method']})")
    return errors.EXIT_GATE if failed else 0
