"""`encbench history`: the trend of one figure over time, per series, from a store.

A figure is a comparison metric of `run` (ratio contender/baseline with its CI and verdict, e.g.
`wall_s` of storm under a TLS suite vs no TLS), or one of TREND_SOURCES: what `tls-scan` and
`leak-check` recorded. Each series is one thing measured again and again (a workload/operation/
variant on a target, a scanned target); its points are oldest first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from ..errors import UnknownNameError
from ..analysis.summary import COMPARED_METRICS


@dataclass(frozen=True)
class TrendSource:
    description: str
    read: Callable  # (store, workload, target) -> list[dict]: rows with run_id, measured_at, target...
    series_fields: tuple[str, ...]  # what stays the same along a series
    point: Callable[[dict], dict]  # value, ci, verdict of one row


def _scan_point(value: Callable[[dict], object]) -> Callable[[dict], dict]:
    def point(r: dict) -> dict:
        drift = json.loads(r["drift"]) if r["drift"] else None
        changes = [c for c in drift or [] if not c.startswith("note:")]
        verdict = f"grade {r['weakest_grade'] or '-'}" + (
            "" if r["drifted"] is None else f", drift: {len(changes)} change(s)" if r["drifted"] else ", no drift")
        return {"value": value(r), "ci": None, "verdict": verdict}
    return point


def _scans(store, workload, target):
    return store.scans(target=target)


TREND_SOURCES: dict[str, TrendSource] = {
    "suites": TrendSource("tls-scan: the number of suites the server accepts (all protocols)", _scans,
                          ("target",), _scan_point(lambda r: r["suites_count"])),
    "protocols": TrendSource("tls-scan: the protocols the server accepts", _scans, ("target",),
                             _scan_point(lambda r: " ".join(json.loads(r["protocols"])) or "none")),
    "findings": TrendSource("leak-check: the files where the canary was found in plaintext",
                            lambda store, workload, target: store.leak_checks(target=target),
                            ("engine", "target"),
                            lambda r: {"value": r["findings"], "ci": None,
                                       "verdict": "leak" if r["findings"] else "clean"}),
}
DEFAULT_METRIC = "wall_s"


def _figure_source(metric: str) -> TrendSource:
    return TrendSource(
        f"run: the ratio contender / baseline of {metric}",
        lambda store, workload, target: store.figures(metric, workload=workload, target=target),
        ("target", "workload", "operation", "variant", "baseline"),
        lambda r: {"value": r["ratio"],
                   "ci": [r["ci_low"], r["ci_high"]] if r["ci_low"] is not None else None,
                   "verdict": r["verdict"]})


def source(metric: str | None) -> TrendSource:
    metric = metric or DEFAULT_METRIC
    if metric in TREND_SOURCES:
        return TREND_SOURCES[metric]
    if metric in COMPARED_METRICS:
        return _figure_source(metric)
    raise UnknownNameError(f"no figure {metric!r} in the history",
                           hint="use " + ", ".join(TREND_SOURCES) + " or a compared metric such as wall_s, cpu_s, "
                                "qps, mb_per_s, connections_per_s")


def trend(store, metric: str | None, *, workload: str | list[str] | None = None, target: str | None = None) -> dict:
    """{metric, description, series: [{<what stays the same>, points: [{run_id, time, value, ci, verdict}]}]}."""
    src = source(metric)
    series: dict[tuple, dict] = {}
    for r in src.read(store, workload, target):
        key = tuple(r[f] for f in src.series_fields)
        entry = series.setdefault(key, {**dict(zip(src.series_fields, key)), "points": []})
        entry["points"].append({"run_id": r["run_id"], "time": r["measured_at"], **src.point(r)})
    return {"metric": metric or DEFAULT_METRIC, "description": src.description, "series": list(series.values())}
