"""`encbench show`: the table (or markdown, or JSON) of a result file, analysed again by this version."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_margin_argument, console, margin_pct
from ..report import render as report
from ..report import csvout
from ..analysis import summary as analysis
from ..lab import results
from ..analysis import model


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file")
    p.add_argument("--format", choices=("table", "markdown", "json", "csv"), default="table",
                   help="table (terminal), markdown (a ticket), json, or csv (one row per comparison)")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument("--detail", action="store_true",
                   help="every column of the tables (a block per row in the terminal) and every warning, one per row "
                        "and metric (default: the columns that carry the verdict, warnings grouped by cause)")
    add_margin_argument(p)


def _emit(doc: dict, analysis, fmt: str, margin: float | None = None, detail: bool = False) -> None:
    """Print one view of the result model (analysis/model.py), built once here: every format renders it."""
    m = model.of(doc, analysis)
    if fmt == "json":
        print(report.render_json(doc, m))
    elif fmt == "markdown":
        print(report.render_markdown(doc, m, detail=detail), end="")
    elif fmt == "csv":
        print(csvout.show_csv(doc, m, margin), end="")
    else:
        report.render_text(doc, m, console(), detail=detail)


def cmd_show(args) -> int:
    results.check_readable(args.file)  # a FIFO or a device is refused, never opened
    doc = results.load(args.file)
    with results.reading(args.file):
        an = analysis.analyze(doc, margin_pct=margin_pct(args))
        an.files = report.write_files(doc, Path(args.file), an.scaling or [], only_missing=True)
        _emit(doc, an, "json" if args.json else args.format, margin_pct(args), detail=args.detail)
    return 0
