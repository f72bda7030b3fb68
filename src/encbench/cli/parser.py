"""The argument parser: the top-level options and one subparser per command (commands.COMMANDS).

A usage error is one line and exit code 2 (errors.UsageError), never argparse's usage dump.
"""

from __future__ import annotations

import argparse

from .. import __version__
from .. import errors
from .commands import COMMANDS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit code 2, no usage dump
        raise errors.UsageError(message, hint=f"see {self.prog} --help")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="encbench", description="Measure what encryption costs a database, side by side.")
    p.add_argument("--version", action="version", version=f"encbench {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for command in COMMANDS:
        command.add_arguments(sub.add_parser(command.name, help=command.help))
    return p
