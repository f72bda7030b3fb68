"""Comparing two result files: the same workload and variant, run B against run A.

Useful across engine versions, machines or settings (the seeds' 2014 vs 2017). Files
whose data set, engine or hardware differ are refused unless --force: such ratios
would measure the difference in set-up, not the thing being compared.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from . import analysis as an
from . import stats
from .errors import IncomparableError
from .units import fmt_seconds

METRICS = (("wall_s", "elapsed"), ("cpu_s", "CPU"))


def _facts(doc: dict) -> dict:
    env, ds = doc["environment"], doc.get("dataset") or {}
    return {
        "engine": doc["engine"]["name"],
        "CPU model": env["cpu"]["model"],
        "cores": env["cpu"]["logical_cores"],
        "data rows": ds.get("rows"),
        "data seed": ds.get("seed"),
        "data generator": ds.get("generator_version"),
    }


def _informational(doc: dict) -> dict:
    env = doc["environment"]
    return {"kernel": env.get("kernel"), **{f"{k} version": v for k, v in env.get("engine_versions", {}).items()},
            "encbench": doc.get("encbench_version")}


def differences(a: dict, b: dict) -> tuple[list[str], list[str]]:
    """(blocking differences, informational differences) between two result files."""
    fa, fb = _facts(a), _facts(b)
    blocking = [f"{k}: {fa[k]} vs {fb[k]}" for k in fa if fa[k] != fb[k]]
    ia, ib = _informational(a), _informational(b)
    info = [f"{k}: {ia.get(k)} vs {ib.get(k)}" for k in sorted(set(ia) | set(ib)) if ia.get(k) != ib.get(k)]
    return blocking, info


def compare(a: dict, b: dict, *, force: bool = False) -> dict:
    blocking, info = differences(a, b)
    if blocking and not force:
        raise IncomparableError(
            "the result files are not comparable: " + "; ".join(blocking),
            hint="compare files from the same engine, data and hardware, or pass --force",
        )
    ga, gb = an.collect(a), an.collect(b)
    rows = []
    for key in ga:
        if key not in gb:
            continue
        wl, op, vl = key
        for metric, word in METRICS:
            va, vb = ga[key].get(metric), gb[key].get(metric)
            if not va or not vb:
                continue
            est = stats.ratio_ci(va, vb)
            rows.append({
                "workload": wl, "operation": op, "variant": vl, "metric": metric,
                "baseline": "A", "contender": "B",
                "mean_a": sum(va) / len(va), "mean_b": sum(vb) / len(vb), "n_a": len(va), "n_b": len(vb),
                "ratio": est.value, "ci": list(est.ci) if est.ci else None, "significant": est.significant,
                "verdict": stats.verdict(word, est),
            })
    only_a = sorted(f"{k[0]}/{k[1]} {k[2]}" for k in ga if k not in gb)
    only_b = sorted(f"{k[0]}/{k[1]} {k[2]}" for k in gb if k not in ga)
    return {"comparisons": rows, "blocking_differences": blocking, "forced": bool(blocking and force),
            "informational_differences": info, "only_in_a": only_a, "only_in_b": only_b}


def _pct(r: dict) -> str:
    if r["ratio"] is None:
        return "-"
    ci = f" [{(r['ci'][0] - 1) * 100:+.0f}, {(r['ci'][1] - 1) * 100:+.0f}]" if r["ci"] else ""
    return f"{(r['ratio'] - 1) * 100:+.0f}%{ci}"


def _notes(out: dict, path_a: str, path_b: str) -> list[str]:
    notes = [f"A = {path_a}, B = {path_b}; ratio = mean(B) / mean(A), bootstrap 95% CI"]
    if out["forced"]:
        notes.append("FORCED despite: " + "; ".join(out["blocking_differences"]))
    if out["informational_differences"]:
        notes.append("differs: " + "; ".join(out["informational_differences"]))
    if out["only_in_a"] or out["only_in_b"]:
        notes.append(f"not compared (in one file only): {len(out['only_in_a'])} in A, {len(out['only_in_b'])} in B")
    return notes


HEADERS = ["workload", "op", "variant", "metric", "A (mean)", "B (mean)", "Δ B vs A [95% CI]", "verdict"]


def _cells(r: dict) -> list[str]:
    return [r["workload"], r["operation"], r["variant"], r["metric"], fmt_seconds(r["mean_a"]),
            fmt_seconds(r["mean_b"]), _pct(r), r["verdict"]]


def render_table(out: dict, path_a: str, path_b: str, console: Console) -> None:
    table = Table(header_style="bold", pad_edge=False)
    for h in HEADERS:
        table.add_column(h, overflow="fold")
    for r in out["comparisons"]:
        table.add_row(*_cells(r))
    console.print(table)
    for line in _notes(out, path_a, path_b):
        console.print(f"  - {line}", highlight=False, soft_wrap=True)


def render(out: dict, fmt: str, path_a: str, path_b: str) -> str:
    if fmt == "json":
        return json.dumps(dict(out, a=path_a, b=path_b), indent=1)
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in out["comparisons"]]
    lines += [""] + [f"- {n}" for n in _notes(out, path_a, path_b)]
    return "\n".join(lines)
