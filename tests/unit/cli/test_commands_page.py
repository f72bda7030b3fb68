"""docs/commands.md lists every command and every option the parser has (issue 30 item 6): the synopsis block is
compared with the parser itself, so an option added to a command and not to its page fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from encbench.cli import parser as cli_parser

PAGE = Path(__file__).resolve().parents[3] / "docs" / "commands.md"


def synopsis() -> dict[str, str]:
    """command -> the text of its synopsis lines (a line `encbench CMD ...` and its indented continuations)."""
    text = PAGE.read_text()
    block = re.search(r"```text\n(.*?)```", text, re.S)
    assert block, "docs/commands.md has no ```text synopsis block"
    out: dict[str, str] = {}
    current = None
    for line in block.group(1).splitlines():
        m = re.match(r"^encbench ([a-z-]+)", line)
        if m:
            current = m.group(1)
            out[current] = out.get(current, "") + " " + line
        elif current and line.startswith(" "):
            out[current] += " " + line
    return out


def options() -> dict[str, set[tuple[str, ...]]]:
    """command -> its options, each as its option strings (-o and --output: either on the page will do), help left
    out."""
    p = cli_parser.build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    out = {}
    for name, parser in sub.choices.items():
        opts = set()
        for action in parser._actions:  # noqa: SLF001
            strings = [s for s in action.option_strings if s not in ("-h", "--help")]
            if strings:
                opts.add(tuple(strings))
        out[name] = opts
    return out


def test_every_command_has_a_synopsis():
    assert set(options()) - set(synopsis()) == set()


def test_every_option_is_on_the_page():
    page = synopsis()
    missing = {name: sorted(o[-1] for o in opts
                            if not any(re.search(re.escape(s) + r"(?![\w-])", page.get(name, "")) for s in o))
               for name, opts in options().items()}
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, f"options missing from docs/commands.md's synopsis: {missing}"


def test_help_examples_are_typed_as_the_program_was_started(tmp_path):
    """README's set-up leaves encbench in .venv/bin, off PATH: --help's examples say that path (issue 30 item 6)."""
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    prog = venv_bin / "encbench"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    assert cli_parser.invocation(".venv/bin/encbench", path="/usr/bin", cwd=str(tmp_path)) == ".venv/bin/encbench"
    assert cli_parser.invocation(str(prog), path="/usr/bin", cwd=str(tmp_path)) == ".venv/bin/encbench"
    assert cli_parser.invocation(str(prog), path=str(venv_bin), cwd="/") == "encbench"  # on PATH: its name
    assert cli_parser.invocation("/x/lib/python3/site-packages/encbench/__main__.py") == "python -m encbench"
