"""Small pieces several commands share: the rich console, the --margin option, --setting NAME=VALUE, --workload
lists."""

from __future__ import annotations

import argparse
import sys
from ..util.columns import pipe_columns
from ..analysis import gate
from ..util.units import shown, split_list


def columns() -> int | None:
    """The width tables are made for: a terminal's own (None: rich reads it, or COLUMNS); in a pipe or a file
    COLUMNS when it is a width, else 100 (util/columns). Prose lines are wrapped to the same width
    (util/columns.wrap)."""
    return None if sys.stdout.isatty() else pipe_columns()


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, width=columns())


def add_margin_argument(p: argparse.ArgumentParser) -> None:
    """--margin, as run, show and compare take it (margin_pct reads it)."""
    p.add_argument("--margin", default=None, metavar="PCT", type=_checked_margin,
                   help="equivalence margin for 'no cost' verdicts, in percent (default 2: the 90%% CI within ±2%%)")


def _checked_margin(text: str) -> str:
    """--margin checked as the command line is read (exit 4), so `run --margin abc` fails before any work."""
    gate.parse_margin(text)
    return text


def margin_pct(args) -> float:
    return gate.parse_margin(args.margin)


def parse_settings(specs: list[str]) -> dict[str, str]:
    from ..engines.local.server import parse_settings  # late: start-up (engines.local loads cryptography's x509)

    return parse_settings(specs)


def workloads(specs: list[str] | str | None) -> list[str]:
    """--workload as given (repeatable, each a comma list, as --variant takes): the names in order, once each."""
    if not specs:
        return []
    specs = [specs] if isinstance(specs, str) else specs
    names = [n for spec in specs
             for n in split_list(spec, what=f"--workload {shown(spec)}", example="--workload storm,bulk")]
    return list(dict.fromkeys(names))
