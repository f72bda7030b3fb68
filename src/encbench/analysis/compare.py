"""Comparing two result files: the same workload and variant, run B against run A.

Useful across engine versions, machines or settings (2014 vs 2017 builds). Files
whose data set, engine or hardware differ are refused unless --force: such ratios
would measure the difference in set-up, not the thing being compared. Two kinds of
rows: the same variant's absolute time (B / A), and the encryption overhead of B over
that of A (a ratio of ratios, which cancels machine drift between the invocations).
Each is compared on elapsed time and CPU, and on the metric its workload's verdict rests
on (`verdict_metrics`: throughput for a fixed-duration mix), the row marked `verdict_metric`
that the gate's `overhead` and `change` judge.

`build()` makes the comparison object once (`Comparison`: its rows with figure, CI, verdict
and metric, its tables, its notes, the gate's cases and verdict); report/compare.py only
words and formats it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import summary as an
from . import gate
from . import stats
from ..drivers.client_share import saturated_runs
from ..errors import IncomparableError
from ..lab import meter

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


def _metrics(a: dict, b: dict, workload: str, operation: str) -> tuple[tuple[str, str], ...]:
    """(metric, word) compared across the files: elapsed and CPU; with both files metered (--meter instructions)
    also the counts their verdicts rest on (instructions; a fixed-duration workload's instructions per query)."""
    if not (meter.is_metered(a) and meter.is_metered(b)):
        return METRICS
    counted = meter.OPEN_VERDICT if (workload, operation) == an.OPEN else tuple(
        dict.fromkeys(an.verdict_metrics(a, workload) + an.verdict_metrics(b, workload)))
    return METRICS + tuple((m, an.metric_word(m)) for m in counted if meter.is_count(m))


def _basis(a: dict, b: dict, workload: str, operation: str) -> tuple[str, ...]:
    """The metrics the rows of this workload and operation are judged on, in order (an.basis_metrics: its
    workload's verdict metrics), A's first."""
    return tuple(dict.fromkeys(an.basis_metrics(a, workload, operation) + an.basis_metrics(b, workload, operation)))


def _compared(a: dict, b: dict, key: tuple, ga: dict, gb: dict) -> tuple[tuple[str, str], ...]:
    """(metric, word) compared for one workload, operation and variant: _metrics, and the first metric its verdict
    rests on that both files hold (throughput for a fixed-duration workload) when it is not among them."""
    compared = _metrics(a, b, key[0], key[1])
    lead = next((m for m in _basis(a, b, key[0], key[1]) if ga[key].get(m) and gb[key].get(m)), None)
    if lead is None or lead in dict(compared):
        return compared
    return compared + ((lead, an.metric_word(lead)),)


def _mark_verdict_metric(rows: list[dict], basis: tuple[str, ...]) -> list[dict]:
    """Each kind's row on the first metric of `basis` gets `verdict_metric`: the row the gate's `overhead` and
    `change` judge, as the table of a run leads with it."""
    for kind in ("absolute", "overhead"):
        mine = [r for r in rows if r["kind"] == kind and r["metric"] in basis]
        if mine:
            min(mine, key=lambda r: basis.index(r["metric"]))["verdict_metric"] = True
    return rows


def _floor_of(floor: dict | None, kind: str, metric: str) -> tuple[float, str]:
    """(floor_pct, where it comes from) for a comparison kind and metric. A count has no drift between invocations
    (the same work, the same count: lab/meter.is_count): no default floor."""
    if floor and metric in floor.get(kind, {}):
        return floor[kind][metric], floor["path"]
    if kind == "absolute" and not meter.is_count(metric):
        return gate.DEFAULT_ABSOLUTE_FLOOR_PCT, "default"
    return 0.0, "none"


def _row(key: tuple[str, str, str], metric: str, word: str, kind: str, est: stats.Estimate, *, margin_pct: float,
         floor: dict | None, withheld: str | None = None, **extra) -> dict:
    wl, op, vl = key
    floor_pct, source = _floor_of(floor, kind, metric)
    word = f"{word} per {extra['per']}" if extra.get("per") else word
    higher = metric in an.HIGHER_IS_BETTER  # a rate: less is the cost
    j = stats.judge_estimate(est, word=f"{word} overhead" if kind == "overhead" else word, margin_pct=margin_pct,
                             floor_pct=floor_pct, higher_is_better=higher)
    verdict, text = j.verdict, j.text
    if withheld:
        verdict, text = stats.WITHHELD, withheld
    return {
        "workload": wl, "operation": op, "variant": vl, "metric": metric, "kind": kind,
        "baseline": "A", "contender": "B", "n_a": est.n_baseline, "n_b": est.n_contender, **extra,
        "ratio": est.value, "ci": list(est.ci) if est.ci else None, "significant": est.significant,
        "ci90": list(est.ci90) if est.ci90 else None, "se_log": est.se, "df": est.df, "excluded": est.excluded,
        "method": est.method, "floor_pct": floor_pct, "floor_source": source, **({"exact": True} if est.exact else {}),
        "verdict": verdict, "verdict_text": text, "equivalence": None if withheld else j.equivalence,
        **({"withheld": withheld} if withheld else {}), **({"higher_is_better": True} if higher else {}),
    }


def _withheld(*groups: tuple[str, dict]) -> str | None:
    """Why a cross-file row gets no verdict: a saturated client in any of its groups (drivers/client_share)."""
    busy = [f"{where} {n} of {len(g['client_saturated'])} runs" for where, g in groups
            if (n := saturated_runs(g.get("client_saturated")))]
    if not busy:
        return None
    return "no verdict: the client was saturated in " + "; ".join(busy) + ": the client, not the server, set the pace"


def _groups(doc: dict) -> dict:
    """analysis.collect's groups, with a fixed-duration workload's times per unit of work (elapsed and CPU per
    query, run by run): its elapsed time is set and its CPU bounded by the window, so only per query can they show
    a change (and the gate's `overhead`/`elapsed`/`cpu` mean the same thing for every workload)."""
    groups = an.collect(doc)
    for key, bucket in groups.items():
        unit = an.count_unit(bucket) if an.fixed_duration(doc, key[0]) else None
        if unit:
            groups[key] = dict(an.per_count(bucket, unit[0]), _per=unit[1])
    return groups


def _mean(values: list[float]) -> float | None:
    s = stats.summarize(values)
    return s.mean if s else None


def compare(a: dict, b: dict, *, force: bool = False, margin_pct: float = stats.DEFAULT_MARGIN_PCT,
            floor: dict | None = None) -> dict:
    """B against A: per workload, operation and variant present in both files, two kinds of rows.

    - kind "absolute": the same variant's elapsed / CPU (and verdict metric), B / A, judged against a noise floor
      (`floor`, from gate.load_floor, else gate.DEFAULT_ABSOLUTE_FLOOR_PCT): machine drift between
      two invocations moves it with no change to the build;
    - kind "overhead": the encryption overhead (contender / baseline inside each file) of B over
      that of A, a ratio of ratios with an interval from all four groups of runs: drift cancels.
    """
    blocking, info = differences(a, b)
    if blocking and not force:
        raise IncomparableError(
            "the result files are not comparable: " + "; ".join(blocking),
            hint="compare files from the same engine, data and hardware, or pass --force",
        )
    ga, gb = _groups(a), _groups(b)
    variants = an.variants_by_label(a)
    judge = {"margin_pct": margin_pct, "floor": floor}
    rows = []
    for key in ga:
        if key not in gb:
            continue
        compared = _compared(a, b, key, ga, gb)
        mine = _absolute_rows(key, compared, ga, gb, judge)
        base_key = _base_key(a, variants, key)
        # the open: key derivation over a sub-millisecond plain open, a ratio in the hundreds whose denominator is
        # noise; the absolute rows judge the open's own time
        if key[:2] != an.OPEN and base_key is not None and base_key in ga and base_key in gb:
            mine += _overhead_rows(key, base_key, compared, ga, gb, judge)
        rows += _mark_verdict_metric(mine, _basis(a, b, key[0], key[1]))
    only_a = sorted(f"{k[0]}/{k[1]} {k[2]}" for k in ga if k not in gb)
    only_b = sorted(f"{k[0]}/{k[1]} {k[2]}" for k in gb if k not in ga)
    return {"comparisons": rows, "blocking_differences": blocking, "forced": bool(blocking and force),
            "informational_differences": info, "only_in_a": only_a, "only_in_b": only_b,
            "margin_pct": margin_pct, "noise_floor": floor}


def _base_key(a: dict, variants: dict, key: tuple) -> tuple | None:
    """The key of the variant a row's overhead is taken against (its table's baseline), or None."""
    wl, op, vl = key
    base_variant = an.baseline_for(variants[vl], a["engine"], wl) if vl in variants else None
    return (wl, op, an.label(base_variant)) if base_variant is not None else None


def _absolute_rows(key: tuple, compared, ga: dict, gb: dict, judge: dict) -> list[dict]:
    """The same variant's value, B / A, per compared metric."""
    vl, rows = key[2], []
    for metric, word in compared:
        va, vb = ga[key].get(metric), gb[key].get(metric)
        if not va or not vb:
            continue
        est = stats.ratio_ci(va, vb, exact=meter.is_count(metric))
        rows.append(_row(key, metric, word, "absolute", est, **judge, mean_a=_mean(va), mean_b=_mean(vb),
                         **_per(ga[key], metric), withheld=_withheld((f"A {vl}", ga[key]), (f"B {vl}", gb[key]))))
    return rows


def _overhead_rows(key: tuple, base_key: tuple, compared, ga: dict, gb: dict, judge: dict) -> list[dict]:
    """B's overhead (contender / baseline) over A's, per compared metric: a ratio of ratios."""
    vl, rows = key[2], []
    for metric, word in compared:
        groups = [ga[base_key].get(metric), ga[key].get(metric), gb[base_key].get(metric), gb[key].get(metric)]
        if not all(groups):
            continue
        est = stats.ratio_of_ratios_ci(*groups, exact=meter.is_count(metric))
        over_a, over_b = stats.ratio_ci(groups[0], groups[1]).value, stats.ratio_ci(groups[2], groups[3]).value
        rows.append(_row(key, metric, word, "overhead", est, **judge,
                         withheld=_withheld((f"A {base_key[2]}", ga[base_key]), (f"A {vl}", ga[key]),
                                            (f"B {base_key[2]}", gb[base_key]), (f"B {vl}", gb[key])),
                         baseline_variant=base_key[2], overhead_a=over_a, overhead_b=over_b,
                         **_per(ga[key], metric),
                         n_a=min(len(stats.finite(g)[0]) for g in groups[:2]),
                         n_b=min(len(stats.finite(g)[0]) for g in groups[2:]),
                         mean_a=_mean(ga[key][metric]), mean_b=_mean(gb[key][metric])))
    return rows


def _per(group: dict, metric: str) -> dict:
    """A row's `per` (its times are per query: a fixed-duration workload), or nothing (a count per unit says its
    unit in its name)."""
    return {"per": group["_per"]} if "_per" in group and metric in dict(METRICS) else {}


def notes(out: dict, path_a: str, path_b: str) -> list[str]:
    """The comparison's notes: what A and B are and how they are compared, the noise floor, what was forced, what
    differs, what was left out."""
    lines = [f"A = {path_a}, B = {path_b}; absolute: B / A of the same variant; overhead: (contender / baseline "
             "in B) / (contender / baseline in A), which cancels a drift of the machine between the two runs; "
             f"ratios of trimmed geometric means, Yuen-Welch t 95% CIs; no cost = the 90% CI within "
             f"±{out.get('margin_pct', stats.DEFAULT_MARGIN_PCT):g}% (two one-sided tests)"]
    floor = out.get("noise_floor")
    if floor:
        lines.append(f"absolute changes are judged beyond the noise floor measured in {floor['path']}: " + ", ".join(
            f"{m} ±{v:.1f}%" for m, v in floor["absolute"].items()))
    elif any(r["kind"] == "absolute" for r in out["comparisons"]):
        lines.append("absolute elapsed/CPU across two invocations cannot separate the build from machine drift: "
                     f"without a measured noise floor (`encbench selftest --save-floor F`, then --noise-floor F) "
                     f"only changes beyond a conservative ±{gate.DEFAULT_ABSOLUTE_FLOOR_PCT:g}% get a verdict; "
                     "the overhead rows need no floor")
    if out["forced"]:
        lines.append("FORCED despite: " + "; ".join(out["blocking_differences"]))
    if out["informational_differences"]:
        lines.append("differs: " + "; ".join(out["informational_differences"]))
    if out["only_in_a"] or out["only_in_b"]:
        lines.append(f"not compared (in one file only): {len(out['only_in_a'])} in A, {len(out['only_in_b'])} in B")
    return lines


def _settings(label: str) -> dict[str, str] | None:
    """A variant label's key=value pairs, or None when it does not read as such."""
    pairs = [part.partition("=") for part in label.split(",")]
    return {k: v for k, _, v in pairs} if all(sep for _, sep, _ in pairs) else None


def varying(rows: list[dict]) -> tuple[list[str], dict[str, str]]:
    """(the keys whose value differs between the rows' variants, label -> those keys' values): a key with one value
    wherever it is set says nothing (kdf_iter, set only where encryption is on). A label that does not read as
    key=value pairs stands as it is."""
    parsed = {r["variant"]: _settings(r["variant"]) for r in rows}
    known = [s for s in parsed.values() if s is not None]
    keys = list(dict.fromkeys(k for s in known for k in s if len({x[k] for x in known if k in x}) > 1))
    return keys, {label: (", ".join(s.get(k, "-") for k in keys) or "-") if s is not None else label
                  for label, s in parsed.items()}


def word(r: dict) -> str:
    """The words of a row's metric as its table's title names it: elapsed, CPU (per query), else the metric."""
    return next((w for m, w in METRICS if m == r["metric"]), r["metric"]) + (f" per {r['per']}" if r.get("per") else "")


@dataclass
class Table:
    """One table of the comparison: one kind (absolute, overhead) on one metric, its rows in order."""

    kind: str
    word: str  # the metric in words (word())
    rows: list[dict]


def tables(rows: list[dict]) -> list[Table]:
    """The rows grouped into tables, one per kind and metric, in the order they first appear."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kind"], word(r)), []).append(r)
    return [Table(kind, w, mine) for (kind, w), mine in groups.items()]


@dataclass
class Comparison:
    """`compare A B`, made once by build(): what every view of it (the terminal's tables, Markdown, JSON, CSV, the
    gate's lines, JUnit) renders; none of them computes a statistic."""

    out: dict  # compare()'s document, with the gate's verdict under "gate" when gated: what --json prints
    path_a: str
    path_b: str
    notes: list[str]
    tables: list[Table]
    varying: list[str]  # the keys the rows' variants differ in (named once, in the tables' titles)
    settings: dict[str, str]  # variant label -> its values of those keys
    conditions: list[gate.Condition] = field(default_factory=list)
    cases: list[dict] = field(default_factory=list)  # gate.cases: each condition on each row it judges

    @property
    def rows(self) -> list[dict]:
        return self.out["comparisons"]

    @property
    def gate(self) -> dict | None:
        return self.out.get("gate")

    def to_dict(self) -> dict:
        """--json: compare()'s document (and the gate's verdict), with the two paths."""
        return dict(self.out, a=self.path_a, b=self.path_b)


def build(a: dict, b: dict, path_a: str, path_b: str, *, force: bool = False,
          margin_pct: float = stats.DEFAULT_MARGIN_PCT, floor: dict | None = None,
          conditions: list[gate.Condition] | tuple = ()) -> Comparison:
    """The comparison of B against A (compare()), judged by the gate's conditions when there are any."""
    return of(compare(a, b, force=force, margin_pct=margin_pct, floor=floor), path_a, path_b, conditions)


def of(out: dict, path_a: str, path_b: str, conditions: list[gate.Condition] | tuple = ()) -> Comparison:
    """The comparison object of compare()'s document: its tables, notes and the gate's cases and verdict, each
    made once."""
    judged = gate.cases(list(conditions), out["comparisons"]) if conditions else []
    if conditions:
        verdict = dict(gate.summarize(judged), conditions=[c.text for c in conditions])
        out["gate"] = dict(verdict, nothing_judged=verdict["checked"] == 0)
    keys, settings = varying(out["comparisons"])
    return Comparison(out, path_a, path_b, notes(out, path_a, path_b), tables(out["comparisons"]), keys, settings,
                      list(conditions), judged)
