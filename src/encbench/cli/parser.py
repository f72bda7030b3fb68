"""The argument parser: the top-level options and one subparser per command (commands.COMMANDS).

A usage error is one line and exit code 2 (errors.UsageError), never argparse's usage dump. An empty value
(`--runs ''`, `-o ''`, `show ''`) is such an error for every option and argument of every command: it never
silently means the default.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from .. import __version__
from .. import errors
from .commands import COMMANDS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit code 2, no usage dump
        raise errors.UsageError(message, hint=f"see {self.prog} --help")


EXAMPLES = ("encbench run", "encbench run --engine mariadb --workload oltp", "encbench advise --quick")
DOCS = Path(__file__).resolve().parents[3] / "docs"  # the source tree's (setup.sh installs it in place)


def page(name: str) -> str:
    """Where a page of the manual is: its path in the source tree when it is there, else its name."""
    return str(DOCS / name) if (DOCS / name).is_file() else f"docs/{name} (in encbench's source)"


def invocation(argv0: str | None = None, path: str | None = None, cwd: str | None = None) -> str:
    """How the user can type this command again: `encbench` when that name on PATH is this very program, else the
    path it was started by (README's set-up puts it in .venv/bin, not on PATH), relative to the working directory
    when that is shorter. `python -m encbench` is typed as such."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if not argv0 or argv0.endswith(("__main__.py", "-c")) or Path(argv0).name != "encbench":
        return "python -m encbench" if argv0.endswith("__main__.py") else "encbench"
    found = shutil.which("encbench", path=path)
    me = os.path.realpath(argv0)
    if found and os.path.realpath(found) == me:
        return "encbench"
    if not os.path.isabs(argv0):
        return argv0 if "/" in argv0 else f"./{argv0}"  # typed relative to the working directory: as typed
    rel = os.path.relpath(argv0, cwd or os.getcwd())
    shown = rel if len(rel) < len(argv0) else argv0
    return shown if "/" in shown else f"./{shown}"


def epilog(examples: tuple[str, ...], page_name: str) -> str:
    """The examples as the user can paste them (`invocation()` in place of `encbench`) and the page to read."""
    prog = invocation()
    shown = [prog + e.removeprefix("encbench") if e.startswith("encbench") else e for e in examples]
    lines = ["examples:", *(f"  {e}" for e in shown), "", f"read: {page(page_name)}"]
    return "\n".join(lines)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's options; with `only`, that command's alone (the others listed, their modules not imported)."""
    p = _Parser(prog="encbench", description="Measure what encryption costs a database, side by side.",
                epilog=epilog(EXAMPLES, "README.md") + " (every page: one line per question a DBA asks)",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"encbench {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for command in COMMANDS:
        sp = sub.add_parser(command.name, help=command.help, epilog=epilog(command.examples, command.page),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        if only is None or command.name == only:
            command.add_arguments(sp)
    for parser in (p, *sub.choices.values()):
        for action in parser._actions:  # noqa: SLF001 - argparse keeps every option's action here, groups included
            if action.nargs != 0 and not isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                action.type = _not_empty(action.type, " or leave the option out for its default"
                                         if action.option_strings else "")
    return p


def command_named(argv: list[str]) -> str | None:
    """The command a command line names (the first word that is not a top-level option), None when none."""
    return next((a for a in argv if not a.startswith("-")), None)


def _not_empty(convert, what_to_do: str):
    """The option's type, after refusing a value that is empty or only blanks."""
    def check(text: str):
        if not text.strip():
            raise argparse.ArgumentTypeError(f"the empty value {text!r}: give a value{what_to_do}")
        return convert(text) if convert is not None else text

    check.__name__ = getattr(convert, "__name__", "value")  # argparse names the type in some messages
    return check
