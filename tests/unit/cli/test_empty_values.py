"""Issue 21 item 7: an empty value never silently means the default. Every option and argument of every command
that takes a value refuses '' (and blanks) as the command line is read: one line, exit 2, before the command
runs (its handler is replaced by a recorder here, so nothing is measured whatever the parser lets through).
`--margin` is checked there too (exit 4), and comma lists refuse an empty item."""

from __future__ import annotations

import argparse
import signal

import pytest

from encbench import cli, errors
from encbench.cli import app
from encbench.cli.commands import COMMANDS


@pytest.fixture(autouse=True)
def _default_signal_handlers():
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)  # cli.main installs its own
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture
def recorded(monkeypatch):
    calls = []
    for c in COMMANDS:  # each command's handler replaced in its own module (the table imports it by name)
        monkeypatch.setattr(c._module(), c.handler_name, lambda *a, _n=c.name: calls.append(_n) or 0)  # noqa: SLF001
    return calls


def _valued(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.nargs != 0 and not isinstance(a, argparse._SubParsersAction)]


def _minimal(parser: argparse.ArgumentParser, skip: argparse.Action | None = None) -> list[str]:
    """Required options with a value, and the positionals (each 'x'), leaving out `skip`."""
    out = []
    for a in _valued(parser):
        if a is skip:
            continue
        if a.option_strings and a.required:
            out += [a.option_strings[0], "x"]
        elif not a.option_strings and a.nargs != "?":
            out.append("x")
    return out


def _cases() -> list[tuple[str, list[str]]]:
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    cases = []
    for name, parser in sub.choices.items():
        positionals = [a for a in _valued(parser) if not a.option_strings]
        for a in _valued(parser):
            if a.option_strings:
                cases.append((f"{name} {a.option_strings[0]}", [name, *_minimal(parser, a), a.option_strings[0], ""]))
            else:
                before = ["x"] * positionals.index(a)
                cases.append((f"{name} {a.dest}", [name, *before, ""]))
    return cases


CASES = _cases()


def test_every_command_has_cases():
    assert {c.split()[0] for c, _ in CASES} >= {c.name for c in COMMANDS if c.name not in ("list", "cleanup")}


@pytest.mark.parametrize("argv", [argv for _, argv in CASES], ids=[name for name, _ in CASES])
@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "blanks"])
def test_an_empty_value_is_refused_before_the_command_runs(recorded, capsys, argv, blank):
    argv = [blank if a == "" else a for a in argv]
    assert app.main(argv) == 2
    err = capsys.readouterr().err
    assert recorded == [] and len(err.splitlines()) == 1 and "empty value" in err, err


@pytest.mark.parametrize("margin", ["abc", "-5", "nan", "0", "100"])
@pytest.mark.parametrize("command", [["run"], ["show", "x.json"], ["compare", "a.json", "b.json"],
                                     ["atrest", "a.json"]])
def test_margin_is_checked_before_the_command_runs(recorded, capsys, command, margin):
    assert app.main([*command, f"--margin={margin}"]) == 4
    err = capsys.readouterr().err
    assert recorded == [] and len(err.splitlines()) == 1 and "--margin" in err, err


def test_a_good_margin_and_defaults_still_pass(recorded):
    assert app.main(["run", "--margin", "5"]) == 0
    assert app.main(["report", "a.json"]) == 0  # a default of a string type (-o) goes through the check too
    assert recorded == ["run", "report"]


def test_workload_comma_lists():
    """--workload takes comma lists, as --variant does (the at-rest hint suggests --workload storm,bulk,...)."""
    from encbench.cli.common import workloads

    assert workloads(["storm,bulk", "connect", "bulk"]) == ["storm", "bulk", "connect"]
    assert workloads("scan-eq, dml") == ["scan-eq", "dml"] and workloads(None) == workloads([]) == []
    with pytest.raises(errors.UsageError, match="empty value between commas"):
        workloads(["storm,,bulk"])
