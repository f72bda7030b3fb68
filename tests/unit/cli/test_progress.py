"""run --progress lines: plain stderr lines for a CI log (a workload's start, then at most every 10 s), with the ETA."""

from __future__ import annotations

import io
from types import SimpleNamespace

from encbench.cli.run import PlainProgress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_a_line_per_workload_start_and_every_ten_seconds():
    clock, out = Clock(), io.StringIO()
    p = PlainProgress(SimpleNamespace(workloads=["scan-like", "dml"]), now=clock, out=out)
    p.update("preparing", 0, 8)
    p.update("measuring raw cipher speed", 0, 8)  # still preparing: no second line
    clock.t = 1
    p.update("scan-like encryption=off", 0, 8)  # a workload starts
    clock.t = 3
    p.update("scan-like encryption=on", 1, 8)  # 2 s later, same workload: quiet
    clock.t = 14
    p.update("scan-like encryption=off", 2, 8)  # 11 s after the last line
    clock.t = 15
    p.update("dml encryption=off", 3, 8)  # the next workload
    p.update("done", 8, 8)
    lines = out.getvalue().splitlines()
    assert lines == [
        "encbench: progress: 0/8 runs, preparing, ETA after the first run",
        "encbench: progress: 0/8 runs, scan-like encryption=off, ETA after the first run",
        "encbench: progress: 2/8 runs, scan-like encryption=off, ETA 39 s",  # (14-1)/2 s per run x 6 left
        "encbench: progress: 3/8 runs, dml encryption=off, ETA 23 s",  # 14/3 x 5 = 23.3
        "encbench: progress: 8/8 runs, done, ETA 0 s",
    ]
    assert not any("\x1b" in line for line in lines)  # no terminal control codes in a log
