"""The run's context in words: the CPU placement, the precision reached, what else the machine was doing.

Made once from the result document's `placement`, `precision` and `run_context` (the runner's records:
lab/placement, lab/precision, lab/runctx) into `Analysis.context`; the terminal (`run`, `show`), Markdown and the
HTML report print these lines as they are. Text only: nothing here measures or judges.
"""

from __future__ import annotations

# the precision rows' metric words (lab/precision.HEADLINE: elapsed and CPU; a fixed-duration run's own metric
# names itself)
PRECISION_WORDS = {"wall_s": "elapsed", "cpu_s": "CPU"}
SHOWN_MISSES = 8  # precision rows that missed their target, printed one a line
SHOWN_FLAGGED = 5  # flagged runs printed one a line


def lines(doc: dict) -> list[str]:
    """The precision line(s), then the placement, the run context and the first flagged runs."""
    return precision_lines(doc) + run_context_lines(doc)


def precision_lines(doc: dict, *, limit: int = SHOWN_MISSES) -> list[str]:
    """The precision reached and the rows that did not get there (doc["precision"], lab/precision.document)."""
    p = doc.get("precision")
    if not p or not (p.get("rows") or p.get("sequential")):  # a sequential run says how it ended, even with no runs
        return []
    runs = p.get("runs_per_variant") or {}
    span = sorted(set(runs.values()))
    runs_text = (f"{span[0]}" if len(span) == 1 else f"{span[0]}-{span[-1]}") + " runs per variant" if span else ""
    widest = p.get("widest_points")
    head = (f"precision: widest CI ±{widest:.1f} points" if widest is not None else "precision: no CI yet")
    elapsed = f", {p['elapsed_s']:.0f} s" if p.get("elapsed_s") is not None else ""
    head += f" over {len(p['rows'])} elapsed/CPU comparisons, {runs_text or 'no measured run'}{elapsed}"
    if p.get("sequential"):
        return [head + f" ({p.get('stopped_because')})"] + sequential_lines(p)
    if p.get("target_points") is None:
        return [head + f" ({p.get('stopped_because')})"]
    missed = [r for r in p["rows"] if r["reached"] is False]
    head += (f"; target ±{p['target_points']:g} points: reached by {len(p['rows']) - len(missed)} of "
             f"{len(p['rows'])} ({p.get('stopped_because')})")
    out = [head]
    missed.sort(key=lambda r: -(r["half_width_points"] if r["half_width_points"] is not None else float("inf")))
    for r in missed[:limit]:
        hw = "no CI" if r["half_width_points"] is None else f"±{r['half_width_points']:.1f} points"
        word = PRECISION_WORDS.get(r["metric"], r["metric"])
        out.append(f"  not reached: {r['workload']}/{r['operation']} {r['contender']} {word}: {hw} "
                   f"({r['n_baseline']}/{r['n_contender']} runs)")
    if len(missed) > limit:
        out.append(f"  ... and {len(missed) - limit} more (doc[\"precision\"][\"rows\"] in the result file)")
    return out


def sequential_lines(p: dict) -> list[str]:
    """--quick / --budget: per workload, how it ended (resolved after N runs, budget spent, last look: the words of
    lab/precision's outcomes), and the rule."""
    seq = p["sequential"]
    out = []
    for wl, o in (seq.get("outcomes") or {}).items():
        if o["stopped"] == "resolved":
            out.append(f"  {wl}: resolved after {o['runs']} runs per variant")
        elif o["stopped"] == "nothing compared":
            out.append(f"  {wl}: nothing compared (no contender beside its baseline) after {o['runs']} runs")
        else:
            out.append(f"  {wl}: not resolved: {o['stopped']} after {o['runs']} runs per variant (run longer: "
                       f"--budget, or without --quick)")
    out.append(f"  verdicts at {seq['confidence']:.0%}: {seq['method']}")
    return out


def run_context_lines(doc: dict, *, limit: int = SHOWN_FLAGGED) -> list[str]:
    """The placement, the context summary (doc["run_context"], lab/runctx.summary) and the first flagged runs."""
    out = []
    pl = doc.get("placement")
    if pl:
        out.append(f"placement: {pl.get('text')}")
    s = doc.get("run_context")
    if not s or not s.get("runs"):
        return out
    steal = "-" if s.get("max_steal_pct") is None else f"{s['max_steal_pct']:.1f}%"
    other = "-" if s.get("median_other_load_cores") is None else f"{s['median_other_load_cores']:.2f}"
    res = s.get("median_other_load_resolution_cores")  # lab/runctx: the counters' ticks over the run (newer files)
    other += f" ±{res:.2f}" if res is not None and other != "-" else ""
    flagged = s.get("flagged_runs") or []
    out.append(f"run context: {len(flagged)} of {s['runs']} runs flagged; steal at most {steal}, "
               f"other processes' load median {other} cores")
    runs = doc.get("runs") or []
    for i in [i for i in flagged if i < len(runs)][:limit]:  # an index past the runs (an edited file): not shown
        run = runs[i]
        flags = (run.get("context") or {}).get("flags") or []
        out.append(f"  run {i + 1} ({run['workload']} {run['variant_label']}{', warmup' if run.get('warmup') else ''}):"
                   f" {'; '.join(flags)}")
    if len(flagged) > limit:
        out.append(f"  ... and {len(flagged) - limit} more (runs[].context in the result file)")
    return out
