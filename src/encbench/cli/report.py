"""`encbench report`: one self-contained HTML file from result files."""

from __future__ import annotations

import argparse
from pathlib import Path
from ..lab import results
from ..report import html as html_report
from ..util.files import check_writable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="RESULTS")
    p.add_argument("-o", "--output", default="encbench-report.html", help="the HTML file (default encbench-report.html)")


def cmd_report(args) -> int:
    check_writable(Path(args.output), hint="choose a writable -o path")
    for f in args.files:
        results.check_readable(f)
    docs = [(Path(f), results.load(f)) for f in args.files]  # every file checked before anything is written
    with results.reading(*args.files):
        out = html_report.write(docs, Path(args.output))
    print(f"report written to {out} ({out.stat().st_size:,} bytes, self-contained)")
    return 0
