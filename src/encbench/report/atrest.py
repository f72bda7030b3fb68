"""One table across engines: which at-rest option costs least for each workload (`encbench atrest A B ...`).

Each result file is analysed as `show` does (analysis.summary.analyze: ratios, 95% CIs, verdicts); every
at-rest comparison there (a contender's `encryption` value against its own file's baseline, `off`) becomes
one cell: option (SQLCipher, InnoDB TDE, InnoDB on fscrypt, PostgreSQL on gocryptfs, ...) x row (workload,
operation, cache). Nothing is compared across files directly: each option is its own ratio to its own plain
baseline, and a row's options are ranked by that ratio. The cheapest is named only when its 95% CI does not
overlap another option's; otherwise the row says "inconclusive" and names the options it cannot separate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis import stats
from ..analysis import summary as an
from ..engines import ENGINES, engine_named
from ..errors import IncomparableError, UsageError
from ..vocab.variants import PLACEBO
from ..util.columns import wrap
from ..util.units import fmt_change

REPORT_VERSION = 1
AT_REST_WORKLOADS = ("scan-like", "scan-eq", "dml", "rebuild", "backup")
AXIS = "encryption"
# the metrics a row can be ranked by: --metric NAME -> (metric in the analysis, word)
METRICS = {"elapsed": ("wall_s", "elapsed"), "cpu": ("cpu_s", "CPU")}
DEFAULT_METRIC = "elapsed"
# what an option's CPU covers, where it is not obvious (said under the table when the option is in it)
CPU_NOTES = {
    "fscrypt": "{name}: fscrypt decrypts reads in kernel worker threads (fscrypt_read_workqueue), not in the "
               "server: this table's CPU ratio (the server's CPU) leaves that out, its elapsed ratio has it; the "
               "per-page cost in `encbench show` counts those threads (kworker_cpu_s). Writes are encrypted in the "
               "writing process and counted",
    "gocryptfs": "{name}: the CPU includes the gocryptfs daemon, where gocryptfs encrypts and decrypts",
}
ROW_ORDER = {w: i for i, w in enumerate(AT_REST_WORKLOADS)}
CACHE_ORDER = {"cold": 0, "warm": 1, "-": 2}


@dataclass
class Option:
    name: str
    engine: str
    value: str  # the contender's encryption value
    file: str
    baseline: str  # the axis' baseline value in its file (each cell names its baseline variant)
    extra: dict = field(default_factory=dict)  # other variant keys that tell two options of one file apart

    def to_dict(self) -> dict:
        return {"name": self.name, "engine": self.engine, "encryption": self.value, "file": self.file,
                "baseline": self.baseline, **({"variant": self.extra} if self.extra else {})}


def option_name(engine: str, label: str, value: str) -> str:
    """The option's name as its engine gives it (Engine.at_rest_names); else "<engine label> encryption=<value>"."""
    names = ENGINES.get(engine).at_rest_names if engine in ENGINES else {}
    return names.get(value, f"{label} encryption={value}")


def _at_rest_table(doc: dict) -> dict | None:
    return next((t for t in an.tables(doc["engine"]) if t["axis"] == AXIS), None)


def _engine_label(doc: dict) -> str:
    try:
        return engine_named(doc["engine"]["name"]).label or doc["engine"]["name"]
    except Exception:  # noqa: BLE001 - an engine this version does not know: its name
        return doc["engine"]["name"]


def file_cells(path: str, doc: dict, analysis, metric: str) -> list[tuple[Option, tuple, dict]]:
    """(option, (workload, operation, cache), comparison) for each at-rest comparison of `metric` in one file."""
    table = _at_rest_table(doc)
    if table is None:
        raise IncomparableError(f"{path}: no encryption-at-rest axis in this result file ({doc['engine']['name']})",
                                hint="give result files of at-rest runs (workloads scan-like, scan-eq, dml, "
                                     "rebuild, backup)")
    engine, label = doc["engine"]["name"], _engine_label(doc)
    variants = an.variants_by_label(doc)
    found = []
    for c in an.Analysis.of(analysis).comparisons:
        contender = variants.get(c["contender"], {})
        if (c["metric"] != metric or c["workload"] not in AT_REST_WORKLOADS or c.get("placebo")
                or contender.get(AXIS) in (None, table["axis_baseline"]) or PLACEBO in contender):
            continue
        found.append((contender, c))
    if not found:
        raise IncomparableError(f"{path}: no at-rest comparison ({AXIS} against {table['axis_baseline']}) of "
                                f"{metric} in this result file",
                                hint="run at-rest workloads with the baseline and an encrypted variant, e.g. "
                                     "--variant encryption=off,on")
    # keys (beyond the axis and cache) whose values differ among one value's contenders name the option apart
    spread: dict[tuple[str, str], set] = {}
    for contender, _ in found:
        for k, v in contender.items():
            if k not in (AXIS, "cache"):
                spread.setdefault((contender[AXIS], k), set()).add(v)
    out = []
    for contender, c in found:
        value = contender[AXIS]
        extra = {k: v for k, v in contender.items() if len(spread.get((value, k), ())) > 1}
        name = option_name(engine, label, value) + (
            " (" + ", ".join(f"{k}={v}" for k, v in extra.items()) + ")" if extra else "")
        opt = Option(name, engine, value, path, f"{AXIS}={table['axis_baseline']}", extra)
        out.append((opt, (c["workload"], c["operation"], contender.get("cache", "-")), c))
    return out


def _overlap(a, b) -> bool:
    """Two 95% CIs overlap (a missing CI overlaps everything: nothing can be told apart)."""
    if not a or not b:
        return True
    return a[0] <= b[1] and b[0] <= a[1]


def rank(cells: dict[str, dict]) -> dict:
    """Options by ratio (cheapest first); the cheapest named only when its CI overlaps no other's."""
    judged = sorted((c["ratio"], name) for name, c in cells.items() if c.get("ratio") is not None)
    order = [name for _, name in judged]
    if not order:
        return {"ranking": [], "outcome": "no estimate", "cheapest": None, "tied": [],
                "text": "no estimate: no ratio in any file"}
    if len(order) == 1:
        return {"ranking": order, "outcome": "one option", "cheapest": None, "tied": [],
                "text": f"only {order[0]} measured: nothing to rank"}
    best = order[0]
    tied = [n for n in order[1:] if _overlap(cells[best].get("ci"), cells[n].get("ci"))]
    if tied:
        return {"ranking": order, "outcome": "inconclusive", "cheapest": None, "tied": [best, *tied],
                "text": f"inconclusive: {', '.join([best, *tied])} (95% CIs overlap)"}
    return {"ranking": order, "outcome": "cheapest", "cheapest": best, "tied": [],
            "text": f"cheapest: {best} (its 95% CI overlaps no other's)"}


def build(named_docs: list[tuple[str, dict]], metric_name: str = DEFAULT_METRIC,
          margin_pct: float = stats.DEFAULT_MARGIN_PCT) -> dict:
    """The cross-engine report from (path, result document) pairs, as plain data (what --json prints)."""
    if metric_name not in METRICS:
        raise UsageError(f"--metric {metric_name!r} is not one of {', '.join(METRICS)}")
    metric, word = METRICS[metric_name]
    options: dict[str, Option] = {}
    rows: dict[tuple, dict[str, dict]] = {}
    files = []
    for path, doc in named_docs:
        analysis = an.analyze(doc, margin_pct=margin_pct)
        cells = file_cells(path, doc, analysis, metric)
        files.append({"path": path, "engine": doc["engine"]["name"], "status": doc.get("status"),
                      "options": sorted({o.name for o, _, _ in cells})})
        for opt, key, c in cells:
            if opt.name in options and options[opt.name].file != path:  # the same option from two files
                opt.name = f"{opt.name} [{Path(path).name}]"
            options.setdefault(opt.name, opt)
            rows.setdefault(key, {})[opt.name] = {
                "ratio": c["ratio"], "ci": c["ci"], "verdict": c["verdict"], "verdict_text": c["verdict_text"],
                "n_baseline": c["n_baseline"], "n_contender": c["n_contender"],
                "baseline": c["baseline"], "contender": c["contender"]}
    out_rows = []
    for (wl, op, cache), cells in sorted(rows.items(), key=lambda kv: (ROW_ORDER.get(kv[0][0], 99), kv[0][1],
                                                                        CACHE_ORDER.get(kv[0][2], 9))):
        out_rows.append({"workload": wl, "operation": op, "cache": cache, "cells": cells, **rank(cells)})
    notes = [f"each option is its ratio of {word} to its own plain baseline in its own file; rows are ranked "
             "by that ratio",
             "a cheapest option is named only when its 95% CI overlaps no other option's; otherwise "
             "'inconclusive' names the options the data cannot separate"]
    for value, text in CPU_NOTES.items():
        for o in options.values():
            if o.value == value:
                notes.append(text.format(name=o.name))
    notes += machine_notes(named_docs)
    for path, doc in named_docs:
        how = (doc.get("dataset") or {}).get("fs_instance_settings")
        if how:  # MariaDB with filesystem variants: its TDE option is the table's encryption alone
            notes.append(f"{path}: {how}; every option of this file is measured against `off` on a plain "
                         "loop-mounted ext4 filesystem")
    return {"kind": "encbench-atrest", "version": REPORT_VERSION, "metric": metric, "metric_word": word,
            "margin_pct": margin_pct, "files": files, "options": [o.to_dict() for o in options.values()],
            "rows": out_rows, "notes": notes}


def _machine(doc: dict) -> tuple:
    env = doc.get("environment") or {}
    cpu = env.get("cpu") or {}
    return cpu.get("model"), cpu.get("logical_cores"), env.get("kernel")


def machine_notes(named_docs: list[tuple[str, dict]]) -> list[str]:
    """A note when the files were measured on machines that differ (CPU model, cores, kernel)."""
    seen = {_machine(doc) for _, doc in named_docs}
    if len(seen) <= 1:
        return []
    return ["the files come from different machines (CPU model, cores, kernel): " + "; ".join(
        f"{path}: {', '.join(str(x) for x in _machine(doc))}" for path, doc in named_docs)
        + " — each ratio holds on its own machine only"]


# -- rendering ------------------------------------------------------------------------------------


def _cell(c: dict | None) -> str:
    return "—" if c is None else f"{fmt_change(c['ratio'], c['ci'])} {c['verdict']}"


def _header(report: dict) -> list[str]:
    files = "; ".join(f"{f['path']} ({f['engine']}{'' if f['status'] == 'complete' else ', ' + str(f['status'])})"
                      for f in report["files"])
    return [f"{report['metric_word']} against each option's own plain baseline: ratio - 1, 95% CI, verdict "
            f"(margin ±{report['margin_pct']:g}%)", f"files: {files}"]


def table_rows(report: dict) -> tuple[list[str], list[list[str]]]:
    names = [o["name"] for o in report["options"]]
    head = ["workload", "op", "cache", *names, "least cost"]
    body = [[r["workload"], r["operation"], r["cache"], *(_cell(r["cells"].get(n)) for n in names), r["text"]]
            for r in report["rows"]]
    return head, body


def render_text(report: dict, console) -> None:
    from rich.table import Table

    for line in _header(report):
        _say(console, line)
    head, body = table_rows(report)
    t = Table(title="Which at-rest option costs least", show_lines=True)
    for h in head:
        t.add_column(h, overflow="fold")
    for row in body:
        t.add_row(*row)
    console.print(t)
    console.print("Notes")
    for n in report["notes"]:
        _say(console, f"  - {n}")


def _say(console, text: str) -> None:
    """A line of prose wrapped to the console's width (util/columns.wrap: at spaces, an item's next lines under its
    text, a figure with its CI whole); rich wraps it no further."""
    for line in wrap(text, console.width):
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def render_markdown(report: dict) -> str:
    head, body = table_rows(report)
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["# Which at-rest option costs least", ""] + [f"- {line}" for line in _header(report)] + [""]
    out.append("| " + " | ".join(esc(h) for h in head) + " |")
    out.append("|" + "---|" * len(head))
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in body]
    out += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(out) + "\n"


def render_json(report: dict) -> str:
    return json.dumps(report, indent=1)
