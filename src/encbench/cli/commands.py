"""The commands of `encbench`, in the order `encbench --help` lists them.

Adding a command: a module in this package with `add_arguments(parser)` and its handler, and one row here.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from . import advise, atrest, cleanup, compare, estimate, history, leakcheck, list as list_cmd, report, run, selftest, show, tlsscan


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[..., int]
    takes_argv: bool = False  # handler(args, argv): the command line is recorded (result files, measure runs)

    def __call__(self, args: argparse.Namespace, argv: list[str]) -> int:
        return self.handler(args, argv) if self.takes_argv else self.handler(args)


COMMANDS: tuple[Command, ...] = (
    Command("run", "run benchmarks (no arguments: the embedded default suite)",
            run.add_arguments, run.cmd_run, takes_argv=True),
    Command("show", "print the table of a result file", show.add_arguments, show.cmd_show),
    Command("compare", "compare the same workload/variant across two result files (B vs A)",
            compare.add_arguments, compare.cmd_compare),
    Command("atrest", "one table across engines: which at-rest option costs least per workload (result files)",
            atrest.add_arguments, atrest.cmd_atrest),
    Command("leak-check", "does plaintext reach the disk although encryption at rest is on?",
            leakcheck.add_arguments, leakcheck.cmd_leak_check, takes_argv=True),
    Command("tls-scan", "what TLS a database server accepts (protocols, suites, groups, certificate)",
            tlsscan.add_arguments, tlsscan.cmd_tls_scan, takes_argv=True),
    Command("report", "one self-contained HTML file from result files (tables, plots, flame graphs)",
            report.add_arguments, report.cmd_report),
    Command("estimate", "the CPU at-rest encryption would add to a server, from a measured per-page cost",
            estimate.add_arguments, estimate.cmd_estimate),
    Command("advise", "which setting makes encryption cheaper, by how much, at what loss of protection (sweeps or "
                      "result files)", advise.add_arguments, advise.cmd_advise, takes_argv=True),
    Command("selftest", "an A/A check of this machine (about a minute): false positives, noise "
                        "floor, cold cache, CPU placement",
            selftest.add_arguments, selftest.cmd_selftest, takes_argv=True),
    Command("history", "what --store recorded (run, tls-scan, leak-check): the runs, and a figure's trend over time",
            history.add_arguments, history.cmd_history),
    Command("cleanup", "remove the filesystems (mounts, loop devices, keys, images) that killed runs left",
            cleanup.add_arguments, cleanup.cmd_cleanup),
    Command("list", "list engines, workloads, variants and probes", list_cmd.add_arguments, list_cmd.cmd_list),
)

BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
