"""The cli package (issue 13 item 1): one table of commands drives both the parser and the dispatch, and
the package face keeps what callers use. In process, no engine is started."""

from __future__ import annotations

import dataclasses

import argparse
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from encbench import cli, errors
from encbench.cli import app
from encbench.cli.commands import BY_NAME, COMMANDS

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

ROOT = TESTS.parent


@pytest.fixture(autouse=True)
def _default_signal_handlers():
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)  # cli.main installs its own
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(action.choices)


def test_the_parser_offers_exactly_the_table_in_its_order():
    assert _subcommands(cli.build_parser()) == [c.name for c in COMMANDS]
    assert len(BY_NAME) == len(COMMANDS)  # no name twice


def test_every_command_help_comes_from_its_row():
    help_text = cli.build_parser().format_help()
    for c in COMMANDS:
        assert " ".join(c.help.split()) in " ".join(help_text.split()), c.name


def _recording(monkeypatch, name: str, takes_argv: bool, result=0):
    calls = []

    def handler(*a):
        calls.append(a)
        if isinstance(result, BaseException):
            raise result
        return result

    command = BY_NAME[name]
    monkeypatch.setattr(command._module(), command.handler_name, handler)  # noqa: SLF001
    monkeypatch.setitem(app.BY_NAME, name, dataclasses.replace(command, takes_argv=takes_argv))
    return calls


@pytest.mark.parametrize("takes_argv", [False, True])
def test_main_dispatches_through_the_table(monkeypatch, takes_argv):
    calls = _recording(monkeypatch, "list", takes_argv, result=7)
    assert cli.main(["list", "--json"]) == 7
    ((args, *rest),) = calls
    assert args.command == "list" and args.json is True
    assert rest == ([["list", "--json"]] if takes_argv else [])


def test_a_command_error_is_one_stderr_line_with_its_exit_code(monkeypatch, capsys):
    _recording(monkeypatch, "report", False, result=errors.BadValueError("--x 'y' is bad", hint="use z"))
    assert cli.main(["report", "a.json"]) == errors.BadValueError.exit_code == 4
    out, err = capsys.readouterr()
    assert out == "" and err == "encbench: error: --x 'y' is bad (use z)\n"


def test_a_bug_in_a_command_is_one_line_exit_1(monkeypatch, capsys):
    _recording(monkeypatch, "show", False, result=RuntimeError("boom"))
    assert cli.main(["show", "f.json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("encbench: internal error: RuntimeError: boom") and err.count("\n") == 1


def test_the_package_face_keeps_what_callers_use():
    script = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["encbench"]
    module, _, attr = script.partition(":")
    assert module == "encbench.cli" and callable(getattr(cli, attr))
    assert callable(cli.main) and callable(cli.build_parser)
    assert (cli.DEFAULT_SIZE, cli.DEFAULT_RUNS) == ("48MB", 6)  # bench/aa_check.py reads them


def test_only_the_command_typed_is_imported():
    """cli/commands names each command's module; build_parser(only=...) imports that one alone (issue 29: the
    commands import at their top, and `encbench --help` still loads neither the engines nor numpy)."""
    code = ("import sys\n"
            "from encbench.cli import app\n"
            "app.build_parser(only=app.command_named(['--debug']) or '')\n"
            "assert not [m for m in ('encbench.engines', 'numpy') if m in sys.modules], sorted(sys.modules)\n"
            "app.build_parser(only=app.command_named(['--debug', 'list', '--json']))\n"
            "cli = sorted(m for m in sys.modules if m.startswith('encbench.cli.'))\n"
            "assert 'encbench.cli.list' in cli and 'encbench.cli.run' not in cli, cli\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
