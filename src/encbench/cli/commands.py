"""The commands of `encbench`, in the order `encbench --help` lists them.

Adding a command: a module in this package with `add_arguments(parser)` and its handler, and one row here.
A row names its module; the module is imported when that command is parsed or run (cli/parser.build_parser's
`only`), so that a command imports what it uses at the top of its module and `encbench show` never loads the
engines: the one place start-up time is kept by a late import.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    module: str  # cli/<module>.py: its add_arguments(parser) and the handler
    handler_name: str
    takes_argv: bool = False  # handler(args, argv): the command line is recorded (result files, measure runs)
    # what `--help` ends with: one or two command lines (checked by the parser in tests/unit/test_docs.py) and
    # the page of docs/ to read
    examples: tuple[str, ...] = ()
    page: str = "README.md"
    # the command makes things (servers, directories, mounts, cgroups): it first reclaims what killed commands left
    # (lab/reclaim.claim, one stderr line) and keeps an owner record of its own (util/owners)
    makes: bool = False

    def _module(self):
        return importlib.import_module(f"{__package__}.{self.module}")

    @property
    def add_arguments(self) -> Callable[[argparse.ArgumentParser], None]:
        return self._module().add_arguments

    @property
    def handler(self) -> Callable[..., int]:
        return getattr(self._module(), self.handler_name)

    def __call__(self, args: argparse.Namespace, argv: list[str]) -> int:
        return self.handler(args, argv) if self.takes_argv else self.handler(args)


COMMANDS: tuple[Command, ...] = (
    Command("run", "run benchmarks (no arguments: the embedded default suite)",
            "run", "cmd_run", takes_argv=True, makes=True,
            examples=('encbench run --quick',
                      'encbench run --engine postgres --dsn postgresql://bench@db1:5432/app --workload roundtrip'),
            page='run.md'),
    Command("show", "print the table of a result file", "show", "cmd_show",
            examples=('encbench show encbench-results/sqlite-20261126-101500.json --detail',), page='run.md'),
    Command("compare", "compare the same workload/variant across two result files (B vs A)",
            "compare", "cmd_compare",
            examples=('encbench compare before.json after.json',
                      "encbench compare before.json after.json --fail-if 'overhead>5%' --junit gate.xml"),
            page='gate.md'),
    Command("atrest", "one table across engines: which at-rest option costs least per workload (result files)",
            "atrest", "cmd_atrest",
            examples=('encbench atrest sqlite.json mariadb.json pg.json',), page='atrest.md'),
    Command("leak-check", "does plaintext reach the disk although encryption at rest is on?",
            "leakcheck", "cmd_leak_check", takes_argv=True, makes=True,
            examples=('encbench leak-check --engine mariadb',
                      'encbench leak-check --engine postgres --dsn postgresql://bench@db1:5432/app --posture'),
            page='leak-check.md'),
    Command("tls-scan", "what TLS a database server accepts (protocols, suites, groups, certificate)",
            "tlsscan", "cmd_tls_scan", takes_argv=True, makes=True,
            examples=('encbench tls-scan postgresql://bench@db1:5432/app',
                      'encbench tls-scan db1:3306/mariadb --measure --top 3'),
            page='tls-scan.md'),
    Command("report", "one self-contained HTML file from result files (tables, plots, flame graphs)",
            "report", "cmd_report",
            examples=('encbench report sqlite.json mariadb.json -o report.html',), page='report.md'),
    Command("calibrate", "fit every unit cost of the encryption bill at once over designed mixes (oltp at rest; "
            "connect, bulk, roundtrip with TLS off and on)",
            "calibrate", "cmd_calibrate", takes_argv=True,
            examples=('encbench calibrate --engine sqlite --quick -o calibration.json',),
            page='estimate.md'),
    Command("estimate", "the encryption bill of a server: each term's rate (read live, or given) x its measured "
                        "unit cost, with its confidence interval",
            "estimate", "cmd_estimate",
            examples=('encbench estimate --from mariadb.json --read-rate 40MB/s --cores 8',
                      'encbench estimate --from pg-tls.json --live postgresql://user@db1/app --seconds 60',
                      'encbench estimate --from mariadb.json --check oltp.json'),
            page='estimate.md'),
    Command("advise", "which setting makes encryption cheaper, by how much, at what loss of protection (sweeps or "
                      "result files)", "advise", "cmd_advise", takes_argv=True, makes=True,
            examples=('encbench advise --quick', 'encbench advise --engine mariadb --json'), page='advise.md'),
    Command("selftest", "an A/A check of this machine (about a minute): false positives, noise "
                        "floor, cold cache, CPU placement",
            "selftest", "cmd_selftest", takes_argv=True, makes=True,
            examples=('encbench selftest',), page='selftest.md'),
    Command("history", "what --store recorded (run, tls-scan, leak-check): the runs, and a figure's trend over time",
            "history", "cmd_history",
            examples=('encbench history --store default',
                      'encbench history --store default --metric cpu --workload scan-eq'),
            page='history.md'),
    Command("cleanup", "remove the filesystems (mounts, loop devices, keys, images) that killed runs left",
            "cleanup", "cmd_cleanup",
            examples=('encbench cleanup', 'encbench cleanup --forget-journal all'), page='encfs.md'),
    Command("list", "list engines, workloads, variants and probes", "list", "cmd_list",
            examples=('encbench list', 'encbench list --json'), page='commands.md'),
)

BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
