"""Comparing two result files: the same workload and variant, run B against run A.

Useful across engine versions, machines or settings (the seeds' 2014 vs 2017). Files
whose data set, engine or hardware differ are refused unless --force: such ratios
would measure the difference in set-up, not the thing being compared. Two kinds of
rows: the same variant's absolute time (B / A), and the encryption overhead of B over
that of A (a ratio of ratios, which cancels machine drift between the invocations).
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from . import summary as an
from . import gate
from . import stats
from ..drivers.client_share import saturated_runs
from ..errors import IncomparableError
from ..lab import meter
from ..util.units import fmt_seconds

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
    j = stats.judge_estimate(est, word=f"{word} overhead" if kind == "overhead" else word, margin_pct=margin_pct,
                             floor_pct=floor_pct)
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
        **({"withheld": withheld} if withheld else {}),
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

    - kind "absolute": the same variant's elapsed / CPU, B / A, judged against a noise floor
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
    rows = []
    for key in ga:
        if key not in gb:
            continue
        wl, op, vl = key
        compared = _metrics(a, b, wl, op)
        for metric, word in compared:
            va, vb = ga[key].get(metric), gb[key].get(metric)
            if not va or not vb:
                continue
            est = stats.ratio_ci(va, vb, exact=meter.is_count(metric))
            rows.append(_row(key, metric, word, "absolute", est, margin_pct=margin_pct,
                             floor=floor, mean_a=_mean(va), mean_b=_mean(vb), **_per(ga[key], metric),
                             withheld=_withheld((f"A {vl}", ga[key]), (f"B {vl}", gb[key]))))
        if (wl, op) == an.OPEN:  # key derivation over a sub-millisecond plain open: a ratio in the hundreds whose
            continue             # denominator is noise; the absolute rows above judge the open's own time
        base_variant = an.baseline_for(variants[vl], a["engine"], wl) if vl in variants else None
        base_key = (wl, op, an.label(base_variant)) if base_variant is not None else None
        if base_key is None or base_key not in ga or base_key not in gb:
            continue
        for metric, word in compared:
            groups = [ga[base_key].get(metric), ga[key].get(metric), gb[base_key].get(metric), gb[key].get(metric)]
            if not all(groups):
                continue
            est = stats.ratio_of_ratios_ci(*groups, exact=meter.is_count(metric))
            over_a, over_b = stats.ratio_ci(groups[0], groups[1]).value, stats.ratio_ci(groups[2], groups[3]).value
            rows.append(_row(key, metric, word, "overhead", est, margin_pct=margin_pct, floor=floor,
                             withheld=_withheld((f"A {base_key[2]}", ga[base_key]), (f"A {vl}", ga[key]),
                                                (f"B {base_key[2]}", gb[base_key]), (f"B {vl}", gb[key])),
                             baseline_variant=base_key[2], overhead_a=over_a, overhead_b=over_b,
                             **_per(ga[key], metric),
                             n_a=min(len(stats.finite(g)[0]) for g in groups[:2]),
                             n_b=min(len(stats.finite(g)[0]) for g in groups[2:]),
                             mean_a=_mean(ga[key][metric]), mean_b=_mean(gb[key][metric])))
    only_a = sorted(f"{k[0]}/{k[1]} {k[2]}" for k in ga if k not in gb)
    only_b = sorted(f"{k[0]}/{k[1]} {k[2]}" for k in gb if k not in ga)
    return {"comparisons": rows, "blocking_differences": blocking, "forced": bool(blocking and force),
            "informational_differences": info, "only_in_a": only_a, "only_in_b": only_b,
            "margin_pct": margin_pct, "noise_floor": floor}


def _per(group: dict, metric: str) -> dict:
    """A row's `per` (its times are per query: a fixed-duration workload), or nothing (a count per unit says its
    unit in its name)."""
    return {"per": group["_per"]} if "_per" in group and metric in dict(METRICS) else {}


def _pct(r: dict) -> str:
    if r["ratio"] is None:
        return "-"
    ci = f" [{(r['ci'][0] - 1) * 100:+.1f}, {(r['ci'][1] - 1) * 100:+.1f}]" if r["ci"] else ""
    return f"{(r['ratio'] - 1) * 100:+.1f}%{ci}"


def _notes(out: dict, path_a: str, path_b: str) -> list[str]:
    notes = [f"A = {path_a}, B = {path_b}; absolute: B / A of the same variant; overhead: (contender / baseline "
             "in B) / (contender / baseline in A), which cancels a drift of the machine between the two runs; "
             f"ratios of trimmed geometric means, Yuen-Welch t 95% CIs; no cost = the 90% CI within "
             f"±{out.get('margin_pct', stats.DEFAULT_MARGIN_PCT):g}% (two one-sided tests)"]
    floor = out.get("noise_floor")
    if floor:
        notes.append(f"absolute changes are judged beyond the noise floor measured in {floor['path']}: " + ", ".join(
            f"{m} ±{v:.1f}%" for m, v in floor["absolute"].items()))
    elif any(r["kind"] == "absolute" for r in out["comparisons"]):
        notes.append("absolute elapsed/CPU across two invocations cannot separate the build from machine drift: "
                     f"without a measured noise floor (`encbench selftest --save-floor F`, then --noise-floor F) "
                     f"only changes beyond a conservative ±{gate.DEFAULT_ABSOLUTE_FLOOR_PCT:g}% get a verdict; "
                     "the overhead rows need no floor")
    if out["forced"]:
        notes.append("FORCED despite: " + "; ".join(out["blocking_differences"]))
    if out["informational_differences"]:
        notes.append("differs: " + "; ".join(out["informational_differences"]))
    if out["only_in_a"] or out["only_in_b"]:
        notes.append(f"not compared (in one file only): {len(out['only_in_a'])} in A, {len(out['only_in_b'])} in B")
    return notes


HEADERS = ["workload", "op", "variant", "metric", "A", "B", "Δ B vs A [95% CI]", "verdict"]


def _fmt(r: dict, side: str) -> str:
    if r["kind"] == "overhead":
        x = r[f"overhead_{side}"]
        return "-" if x is None else f"{(x - 1) * 100:+.1f}% overhead"
    return fmt_seconds(r[f"mean_{side}"]) if r[f"mean_{side}"] is not None else "-"


def _cells(r: dict) -> list[str]:
    metric = r["metric"] + (f" per {r['per']}" if r.get("per") else "")
    metric = f"{metric} overhead" if r["kind"] == "overhead" else metric
    return [r["workload"], r["operation"], r["variant"], metric, _fmt(r, "a"), _fmt(r, "b"), _pct(r),
            r["verdict_text"]]


# the terminal's tables, one per kind and metric, made to fit 100 columns: the row, the values of the keys its variants
# differ in (named once, in the header), the means (or overheads) of A and B in one cell, the change, the verdict in a
# few words (the whole sentence: --format markdown, --json)
TABLE_TITLES = {"absolute": "{word}: B / A of the same variant", "overhead": "{word} overhead: B's encryption overhead "
                                                                         "over A's"}
SHORT_VERDICTS = {stats.COSTS: "costs", stats.SAVES: "saves", stats.INCONCLUSIVE: "inconclusive",
                  stats.TOO_FEW_RUNS: "too few runs", stats.NO_ESTIMATE: "no estimate",
                  stats.WITHHELD: "no verdict: client-bound"}
WHOLE_VERDICTS = "each verdict's whole sentence: --format markdown or --json"


def _settings(label: str) -> dict[str, str] | None:
    """A variant label's key=value pairs, or None when it does not read as such."""
    pairs = [part.partition("=") for part in label.split(",")]
    return {k: v for k, _, v in pairs} if all(sep for _, sep, _ in pairs) else None


def _varying(rows: list[dict]) -> tuple[list[str], dict[str, str]]:
    """(the keys whose value differs between the rows' variants, label -> those keys' values): a key with one value
    wherever it is set says nothing (kdf_iter, set only where encryption is on). A label that does not read as
    key=value pairs stands as it is."""
    parsed = {r["variant"]: _settings(r["variant"]) for r in rows}
    known = [s for s in parsed.values() if s is not None]
    keys = list(dict.fromkeys(k for s in known for k in s if len({x[k] for x in known if k in x}) > 1))
    return keys, {label: (", ".join(s.get(k, "-") for k in keys) or "-") if s is not None else label
                  for label, s in parsed.items()}


def _sides(r: dict) -> str:
    """A → B: the means ('6.7 → 6.9 ms', one unit when both share it), or the two overheads ('+12.0% → +14.1%')."""
    if r["kind"] == "overhead":
        a, b = (("-" if r[f"overhead_{s}"] is None else f"{(r[f'overhead_{s}'] - 1) * 100:+.1f}%") for s in "ab")
        return f"{a} → {b}"
    (x, _, unit_a), (y, _, unit_b) = (_fmt(r, s).rpartition(" ") for s in "ab")
    return f"{x} → {y} {unit_a}" if x and y and unit_a == unit_b else f"{_fmt(r, 'a')} → {_fmt(r, 'b')}"


def _short_verdict(r: dict) -> str:
    if r["verdict"] == stats.NO_COST:
        return f"no cost ±{r['equivalence']['margin_pct']:g}%" if r.get("equivalence") else "no cost"
    return SHORT_VERDICTS.get(r["verdict"], r["verdict"])


def _word(r: dict) -> str:
    return next((w for m, w in METRICS if m == r["metric"]), r["metric"]) + (f" per {r['per']}" if r.get("per") else "")


def render_table(out: dict, path_a: str, path_b: str, console: Console) -> None:
    keys, values = _varying(out["comparisons"])
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in out["comparisons"]:
        groups.setdefault((r["kind"], _word(r)), []).append(r)
    for (kind, word), mine in groups.items():
        title = TABLE_TITLES[kind].format(word=word) + (f"; variant: {', '.join(keys)}" if keys else "")
        table = Table(header_style="bold", pad_edge=False, title=title, title_justify="left", title_style="bold")
        for header in ("row", "variant", "A → B", "Δ B vs A [95% CI]", "verdict"):  # a narrow terminal wraps cells
            table.add_column(header, overflow="fold")
        for r in mine:
            table.add_row(f"{r['workload']}/{r['operation']}", values[r["variant"]], _sides(r), _pct(r),
                          _short_verdict(r))
        console.print(table)
    if not groups:
        console.print("no workload and variant in both files: nothing compared", highlight=False)
    for line in _notes(out, path_a, path_b) + ([WHOLE_VERDICTS] if out["comparisons"] else []):
        console.print(f"  - {line}", highlight=False, soft_wrap=not console.is_terminal)


def render(out: dict, fmt: str, path_a: str, path_b: str) -> str:
    if fmt == "json":
        return json.dumps(dict(out, a=path_a, b=path_b), indent=1)
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |" for r in out["comparisons"]]
    lines += [""] + [f"- {n}" for n in _notes(out, path_a, path_b)]
    return "\n".join(lines)
