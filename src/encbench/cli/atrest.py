"""`encbench atrest A.json B.json ...`: one table across engines, which at-rest option costs least per workload
(report/atrest.py), from result files each analysed as `show` analyses it."""

from __future__ import annotations

import argparse

from .common import add_margin_argument, console, margin_pct
from ..report import atrest
from ..lab import results


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="result files of at-rest runs (any engines)")
    p.add_argument("--metric", choices=tuple(atrest.METRICS), default=atrest.DEFAULT_METRIC,
                   help=f"rank by this ratio (default {atrest.DEFAULT_METRIC})")
    p.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                   help="table (terminal), markdown (a ticket) or json")
    p.add_argument("--json", action="store_true", help="same as --format json")
    add_margin_argument(p)


def cmd_atrest(args) -> int:
    for f in args.files:
        results.check_readable(f)  # a FIFO or a device is refused, never opened
    docs = [(f, results.load(f)) for f in args.files]
    with results.reading(*args.files):
        report = atrest.build(docs, args.metric, margin_pct(args))
    fmt = "json" if args.json else args.format
    if fmt == "json":
        print(atrest.render_json(report))
    elif fmt == "markdown":
        print(atrest.render_markdown(report), end="")
    else:
        atrest.render_text(report, console())
    return 0
