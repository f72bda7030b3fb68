"""Issue 29 (done when, second bullet): rendering a result makes at most 5 calls into the analysis (the model is
built once; every view reads it), builds the headline once and computes each comparison's CI once, in `show`
and in `run` (the runner stores the analysis; the command renders what it stored)."""

from __future__ import annotations

import io
import sys
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from encbench.analysis import headline, stats, summary as an
from encbench.lab import results
from encbench.report import render

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
MAX_CALLS = 5


class Trace:
    """Calls from report/ and cli/ into analysis/ (a function of an analysis module called by a renderer), the
    headlines built and the ratio CIs computed."""

    def __init__(self, monkeypatch) -> None:
        self.calls: Counter = Counter()
        self.counts: Counter = Counter()
        for module, name in ((headline, "build"), (stats, "ratio_ci")):
            monkeypatch.setattr(module, name, self._counted(getattr(module, name), name))

    def _counted(self, fn, name: str):
        def wrapper(*args, **kwargs):
            self.counts[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    def _profile(self, frame, event, arg):
        if event != "call" or frame.f_code.co_name.startswith("__"):
            return
        callee = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if callee.startswith("encbench.analysis") and caller.startswith(("encbench.report", "encbench.cli")):
            self.calls[f"{callee}.{frame.f_code.co_name}"] += 1

    def __enter__(self):
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)


def _views(doc: dict, analysis) -> None:
    render.render_text(doc, analysis, Console(file=io.StringIO(), width=100))


@pytest.mark.parametrize("name", ["sqlite-default.json", "postgres-tls.json", "results-v1.json"])
def test_show_builds_the_model_once(monkeypatch, name):
    doc = results.load(GOLDEN / name)
    trace = Trace(monkeypatch)
    a = an.analyze(doc)
    with trace:
        _views(doc, a)
    assert sum(trace.calls.values()) <= MAX_CALLS, trace.calls
    assert trace.counts["build"] == 1
    assert trace.counts["ratio_ci"] == len(a.comparisons) + len(a.placebo_comparisons or [])


def test_run_renders_what_it_stored_with_one_headline(monkeypatch):
    """`run`: the runner stores analyze(doc).stored(); the command reads it back (Analysis.from_doc) and prints it:
    one headline (it was built twice), each CI once (in the runner's analysis)."""
    doc = results.load(GOLDEN / "sqlite-default.json")
    trace = Trace(monkeypatch)
    doc.update(an.analyze(doc).stored())  # lab/runner
    with trace:
        _views(doc, an.Analysis.from_doc(doc))  # cli/run
    assert sum(trace.calls.values()) <= MAX_CALLS, trace.calls
    assert trace.counts["build"] == 1
    assert trace.counts["ratio_ci"] == len(doc["comparisons"]) + len(doc.get("placebo_comparisons") or [])
