"""The `encbench` command: run, show, compare, list, leak-check, tls-scan, report, estimate, selftest.

One module per command (its options and its handler), listed in commands.COMMANDS; parser.py builds
the parser from that table; app.py holds main() and entry() and maps every EncbenchError to one
stderr line and its exit code. This package face keeps what callers use: `encbench.cli:entry` (the
console script), `python -m encbench.cli`, `main`, `build_parser` and the defaults.
"""

from __future__ import annotations

from .app import entry, main
from .defaults import DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_SIZE, QUICK_RUNS, QUICK_SIZE
from .parser import build_parser

__all__ = ["DEFAULT_RUNS", "DEFAULT_SEED", "DEFAULT_SIZE", "QUICK_RUNS", "QUICK_SIZE", "build_parser", "entry", "main"]
