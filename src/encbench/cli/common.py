"""Small pieces several commands share: the rich console, the --margin option, --setting NAME=VALUE."""

from __future__ import annotations

import argparse
import sys


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, width=None if sys.stdout.isatty() else 200)


def add_margin_argument(p: argparse.ArgumentParser) -> None:
    """--margin, as run, show and compare take it (margin_pct reads it)."""
    p.add_argument("--margin", default=None, metavar="PCT",
                   help="equivalence margin for 'no cost' verdicts, in percent (default 2: the 90%% CI within ±2%%)")


def margin_pct(args) -> float:
    from ..analysis import gate

    return gate.parse_margin(args.margin)


def parse_settings(specs: list[str]) -> dict[str, str]:
    from ..engines.local.server import parse_settings

    return parse_settings(specs)
