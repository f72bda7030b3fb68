"""From cost to decision (issue 24): every setting that changes the price of encryption, ranked.

An engine declares its knobs (`Engine.knobs`: engines/<name>/knobs.py): a variant key a DBA can set, its default,
the costs it changes (workload/operation rows and their metric: the CPU of a cold scan, the open's time, a
transaction's CPU...), and per value what it gives up (page authentication, forward secrecy, key strength, FIPS
status). `advise(docs)` finds, in one or more result files, every pair of variants that differ in that key alone
(one at the knob's default), compares the value against the default with the usual statistics (ratio of trimmed
geometric means, Yuen-Welch 95% CI, the three-way verdict), and ranks:

- a value that saves, shown (its CI below 1), and gives up nothing: ranked by its saving;
- a value that saves but weakens protection: never a plain win; listed with what it gives up, apart;
- a value that costs more, or whose difference is not resolved: said so, never ranked.

Each line says where the saving comes from when the measurements tell it (`Knob.explain`: e.g. "the page HMAC is
69% of a cold page read's CPU here (hmac off saves that much); this CPU has SHA-NI"). Nothing is assumed: every
figure is a comparison of runs in the files.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from . import stats
from ..vocab.knob import Cost, Knob
from .summary import collect, variants_by_label, verdict_confidence
from ..lab import meter
from .words import metric_word
from ..util.units import fmt_number, fmt_seconds
from ..vocab.variants import label

METHOD = ("each value against the knob's default, all other settings equal, in the same result file: ratio of trimmed "
          "geometric means of the runs with a Yuen-Welch 95% CI (99% for sweeps run under --budget: run.md); "
          "saves/costs = the CI excludes no change, no "
          f"difference = the 90% CI within ±{stats.DEFAULT_MARGIN_PCT:g}% (two one-sided tests); ranked: savings that "
          "give up nothing by size, then savings that weaken protection, then the rest, never ranked")
SAVES, WEAKER_SAVES, COSTS_MORE, NOT_RESOLVED, NO_DIFFERENCE = (
    "saves", "saves, gives up protection", "costs more", "not resolved", "no difference")


def _matches(variant: dict, scope) -> bool:
    return all(variant.get(k) == v for k, v in scope)


def pairs(doc: dict, knob: Knob, groups: dict) -> list[tuple[str, str, str, str, dict]]:
    """(workload, operation, default's label, value's label, the value's variant) of every pair of measured
    variants (analysis.collect's groups: the connection open's too) that differ in the knob's key alone, one of them
    at the default."""
    variants = variants_by_label(doc)
    measured = set(groups)
    out = []
    for wl, op, vl in sorted(measured):
        v = variants.get(vl) or {}
        if knob.key not in v or v[knob.key] == knob.default:
            continue
        twin = label({**v, knob.key: knob.default})
        if (wl, op, twin) in measured:
            out.append((wl, op, twin, vl, v))
    return out


def _entry(knob: Knob, cost: Cost, groups: dict, wl: str, op: str, base_l: str, cont_l: str, v: dict,
           source: str, confidence: float = stats.CONFIDENCE) -> dict | None:
    base, cont = groups.get((wl, op, base_l), {}), groups.get((wl, op, cont_l), {})
    if "instructions" in base and "instructions" in cont:  # --meter instructions: the count, not valgrind's times
        cost = replace(cost, metric="instructions")
    if cost.metric not in base or cost.metric not in cont:
        return None
    est = stats.ratio_ci(base[cost.metric], cont[cost.metric], exact=meter.is_count(cost.metric),
                         confidence=confidence)  # a sweep run under --budget: its sequential level
    j = stats.judge_estimate(est, word=metric_word(cost.metric))
    return {"key": knob.key, "knob": knob.label, "value": v[knob.key], "default": knob.default,
            "workload": wl, "operation": op, "metric": cost.metric, "what": cost.what or f"{wl}/{op}",
            "baseline": base_l, "contender": cont_l, "ratio": est.value, "ci": list(est.ci) if est.ci else None,
            "n": min(est.n_baseline, est.n_contender), "verdict": j.verdict, "verdict_text": j.text,
            # a time at the default (an explanation's figure); a count is no time: baseline_count instead
            "baseline_mean": stats.summarize(base[cost.metric]).mean if base[cost.metric]
            and not meter.is_count(cost.metric) else None,
            **({"baseline_count": stats.summarize(base[cost.metric]).mean} if meter.is_count(cost.metric) else {}),
            "baseline_ci": list(stats.mean_ci(base[cost.metric]) or []) or None,
            "baseline_n": len(base[cost.metric]),
            "gives_up": knob.gives_up.get(v[knob.key], ""), "weakens": v[knob.key] in knob.weakens,
            "setting": knob.setting_of(v[knob.key]), "server_side": knob.server_side, "file": source}


def standing(e: dict) -> str:
    """Where an entry ranks: saves (plain or weaker), costs more, no difference, or not resolved."""
    if e["verdict"] == stats.SAVES:
        return WEAKER_SAVES if e["weakens"] else SAVES
    if e["verdict"] == stats.COSTS:
        return COSTS_MORE
    if e["verdict"] == stats.NO_COST:
        return NO_DIFFERENCE
    return NOT_RESOLVED


def advise(docs: list[tuple[str, dict]], knobs: tuple[Knob, ...], context: dict | None = None) -> list[dict]:
    """Every knob value measured in the files against its default: one entry per (knob, value), its first cost with
    data ranked (the others beside it as `also`), ordered: plain savings by size, weaker savings, no difference,
    costs more, not resolved."""
    found: dict[tuple[str, str], list[dict]] = {}
    for source, doc in docs:
        groups = collect(doc)
        for knob in knobs:
            for wl, op, base_l, cont_l, v in pairs(doc, knob, groups):
                for rank, cost in enumerate(knob.costs):
                    if cost.workload != wl or (cost.operation and cost.operation != op) or not _matches(v, cost.scope):
                        continue
                    e = _entry(knob, cost, groups, wl, op, base_l, cont_l, v, source, verdict_confidence(doc))
                    if e:
                        found.setdefault((knob.key, e["value"]), []).append(dict(e, cost_rank=rank))
    out = []
    by_key = {k.key: k for k in knobs}
    for (key, value), entries in found.items():
        entries.sort(key=lambda e: (e["cost_rank"], e["workload"], e["operation"], e["contender"]))
        head = dict(entries[0])
        head["also"] = [{k: e[k] for k in ("what", "workload", "operation", "contender", "metric", "ratio", "ci",
                                           "verdict")} for e in entries[1:]]
        head["standing"] = standing(head)
        knob = by_key[key]
        head["explanation"] = knob.explain(head, dict(context or {}, entries=entries)) if knob.explain else None
        out.append(head)
    # ranked within each cost (a connection open's time and a page read's CPU are not one scale), costs in the order
    # the knobs declare them; within a cost: plain savings by size, weaker savings, then the unranked rest
    costs = list(dict.fromkeys(c.what or c.workload for k in knobs for c in k.costs))
    order = [SAVES, WEAKER_SAVES, NO_DIFFERENCE, COSTS_MORE, NOT_RESOLVED]
    out.sort(key=lambda e: (costs.index(e["what"]) if e["what"] in costs else len(costs), order.index(e["standing"]),
                            e["ratio"] if e["ratio"] is not None else math.inf))
    rank: dict[str, int] = {}
    for e in out:
        if e["standing"] in (SAVES, WEAKER_SAVES):
            rank[e["what"]] = rank.get(e["what"], 0) + 1
            e["rank"] = rank[e["what"]]
        else:
            e["rank"] = None
    return out


def _pct(x: float) -> str:
    return f"{fmt_number((x - 1) * 100, True, 0)}%"


def line(e: dict) -> str:
    """One entry in words: the setting, the measured change with its CI, what it gives up, why."""
    ci = f" [{_pct(e['ci'][0])}, {_pct(e['ci'][1])}]" if e["ci"] else ""
    change = f"{_pct(e['ratio'])}{ci} {metric_word(e['metric'])} of {e['what']}" if e["ratio"] is not None \
        else "no estimate"
    head = f"{e['knob']} {e['value']} (default {e['default']}): "
    change = change.replace(f" of {e['what']}", "")  # the cost is the group's title
    words = {SAVES: f"saves: {change}", WEAKER_SAVES: f"saves {change}, but gives up: {e['gives_up']}",
             NO_DIFFERENCE: f"no difference: {change} (within the ±{stats.DEFAULT_MARGIN_PCT:g}% margin)",
             COSTS_MORE: f"costs more: {change}",
             NOT_RESOLVED: f"not resolved: {e['verdict_text']}"}[e["standing"]]
    text = head + words
    for a in e.get("also") or []:  # the same value measured on another cost (a real mix beside the scan)
        if a["ratio"] is not None:
            ci = f" [{_pct(a['ci'][0])}, {_pct(a['ci'][1])}]" if a["ci"] else ""
            text += f"; {a['what']}: {_pct(a['ratio'])}{ci} {metric_word(a['metric'])} ({a['verdict'].replace('_', ' ')})"
    if e["gives_up"] and e["standing"] != WEAKER_SAVES:
        text += f"; gives up: {e['gives_up']}"
    if e.get("explanation"):
        text += f"; {e['explanation']}"
    if e.get("setting"):
        text += f" (set: {e['setting']})"
    return text


def _amount(metric: str, x: float) -> str:
    """A figure in its metric's unit: seconds as ms or µs, CPU per unit in µs, latency in ms, else the number."""
    if metric.endswith("_s"):
        return fmt_seconds(x)
    if "_us_per_" in metric:
        return f"{x:,.1f} µs"
    if metric.endswith("_ms"):
        return f"{x:,.2f} ms"
    return f"{x:,.3g}"


def default_figures(entries: list[dict]) -> list[str]:
    """The default's own figure in each sweep file of one cost, once per file (each file measures its default
    again: the figures differ by the machine's noise): '572.1 ms [560.3, 583.9] (advise-kdf-iter.json, 6 runs)'."""
    out = {}
    for e in entries:
        where = (e["file"], e["baseline"], e["workload"], e["operation"])
        if where in out or e.get("baseline_mean") is None:
            continue
        ci = e.get("baseline_ci")
        out[where] = (_amount(e["metric"], e["baseline_mean"])
                      + (f" [{_amount(e['metric'], ci[0])}, {_amount(e['metric'], ci[1])}]" if ci else "")
                      + f" ({Path(e['file']).name}, mean of {e.get('baseline_n', '?')} runs)")
    return list(out.values())


def lines(entries: list[dict]) -> list[str]:
    out = []
    for e in entries:
        prefix = f"{e['rank']}. " if e["rank"] else "-  "
        out.append(prefix + line(e))
    return out


def report_lines(entries: list[dict], files: list[str]) -> list[str]:
    """The ranked list as `encbench advise` prints it: a title, the entries, how they were obtained."""
    if not entries:
        return [f"advise: no knob was measured at two values in {', '.join(files)} (a sweep varies one knob against "
                "its default: run `encbench advise` without --from, or `encbench run --variant hmac=sha512,sha256`)"]
    ranked = sum(1 for e in entries if e["rank"])
    out = [f"What makes encryption cheaper here: {len(entries)} settings measured against their defaults, "
           f"{ranked} shown to save ({len(files)} result file{'s' if len(files) != 1 else ''})"]
    for what in dict.fromkeys(e["what"] for e in entries):
        mine = [e for e in entries if e["what"] == what]
        out.append(f"  {what} ({metric_word(mine[0]['metric'])}):")
        defaults = default_figures(mine)
        if defaults:
            out.append(f"    at the defaults, as each sweep file measured them: {'; '.join(defaults)}")
        out += [f"    {x}" for x in lines(mine)]
    out.append(f"  how: {METHOD}; the runs: {', '.join(files)}")
    return out
