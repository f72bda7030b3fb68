"""The runs of a result file grouped as every analysis reads them: (workload, operation, variant label) -> metric
-> per-run values; the tables and baselines an engine declares; the centre a ratio is made of."""

from __future__ import annotations

from collections import defaultdict

from . import stats
from ..vocab.variants import label


OPEN = ("(open)", "connect")  # workload/operation names of the connection open (key derivation)


def _normalize(variant: dict, keys: list[dict]) -> dict:
    return {
        k["name"]: variant[k["name"]]
        for k in keys
        if k["name"] in variant and all(variant.get(a) == b for a, b in k["applies_when"])
    }


def tables(engine: dict) -> list[dict]:
    """The report's tables (one per axis); a file without engine.tables has one, from engine.axis."""
    return engine.get("tables") or [{"title": "", "axis": engine["axis"], "axis_baseline": engine["axis_baseline"],
                                     "workloads": None, "table_columns": engine.get("table_columns"),
                                     "metric_words": engine.get("metric_words") or {}}]


def table_for(engine: dict, workload: str) -> dict:
    found = [t for t in tables(engine) if not t["workloads"] or workload in t["workloads"]]
    return found[0] if found else tables(engine)[0]


def baseline_for(variant: dict, engine: dict, workload: str = "") -> dict | None:
    t = table_for(engine, workload)
    axis, base = t["axis"], t["axis_baseline"]
    if variant.get(axis) in (None, base):
        return None
    return _normalize({**variant, axis: base}, engine["variant_keys"])


def collect(doc: dict) -> dict[tuple[str, str, str], dict[str, list[float]]]:
    """(workload, operation, variant label) -> metric -> per-run values (warmups left out)."""
    out: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in doc["runs"]:
        if run.get("warmup"):
            continue
        vl = run["variant_label"]
        for op in run.get("operations", []):
            bucket = out[(run["workload"], op["operation"], vl)]
            for name, value in {**op.get("metrics", {}), **op.get("extra", {})}.items():
                if isinstance(value, (int, float)):
                    bucket[name].append(float(value))
            per_unit(bucket, op.get("metrics", {}), op.get("extra", {}))
        for name, value in (run.get("open") or {}).items():
            out[(*OPEN, vl)][name].append(float(value))
    return out


# extra counts that make a per-unit cost: CPU per query, per message, per connection
PER_UNIT = (("queries", "query"), ("messages", "message"), ("connections", "connection"), ("rows_hashed", "row"),
            ("transactions", "transaction"))


PAGES_PER_UNIT = {"transaction": ("pages_read", "pages_written")}  # a transaction's physical page I/O


def per_unit(bucket: dict, metrics: dict, extra: dict) -> None:
    for count_key, unit in PER_UNIT:
        count = extra.get(count_key)
        if not count:
            continue
        for metric, prefix in (("cpu_s", "cpu"), ("client_cpu_s", "client_cpu")):
            if metric in metrics:
                bucket[f"{prefix}_us_per_{unit}"].append(1e6 * metrics[metric] / count)
        if "instructions" in metrics:  # --meter instructions: the count per unit, as CPU per unit
            bucket[f"instructions_per_{unit}"].append(metrics["instructions"] / count)
        for metric in PAGES_PER_UNIT.get(unit, ()):
            if isinstance(metrics.get(metric), (int, float)):
                bucket[f"{metric}_per_{unit}"].append(metrics[metric] / count)
        return


def variants_by_label(doc: dict) -> dict[str, dict]:
    found = {label(v): v for v in doc["engine"].get("variants", [])}
    for run in doc["runs"]:
        found.setdefault(run["variant_label"], run["variant"])
    return found


def centre(values: list[float]) -> float | None:
    """The value a Δ's ratio is made of (stats.ratio_ci's centre of one side): the 20%-trimmed geometric mean, the
    mean when a value is zero or negative; what the summary scales a ratio by to say a change in its unit."""
    return stats.log_contrast([(values, 1)]).value
