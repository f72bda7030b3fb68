"""Rendering: the side-by-side table (terminal, markdown), derived figures and notes."""

from __future__ import annotations

import json
import shlex
from collections import defaultdict

from rich.console import Console
from rich.table import Table

from . import analysis as an
from . import stats
from .probes import metric_catalog
from .redact import redact
from .units import fmt_bytes, fmt_count, fmt_seconds


def _pct(ratio, ci) -> str:
    if ratio is None:
        return "-"
    text = f"{(ratio - 1) * 100:+.0f}%"
    if ci:
        text += f" [{(ci[0] - 1) * 100:+.0f}, {(ci[1] - 1) * 100:+.0f}]"
    return text


def _means(groups, key) -> dict[str, float]:
    return {m: sum(v) / len(v) for m, v in groups.get(key, {}).items() if v}


def rows(doc: dict, analysis: dict) -> list[dict]:
    """One row per (workload, operation, contender variant), baseline and contender side by side."""
    groups = an.collect(doc)
    axis = doc["engine"]["axis"]
    comps = defaultdict(list)
    for c in analysis["comparisons"]:
        comps[(c["workload"], c["operation"], c["contender"], c["baseline"])].append(c)
    order = list(doc.get("workloads", {}))
    variants = an.variants_by_label(doc)
    varying = {k for v in variants.values() for k in v
               if k != axis and len({x[k] for x in variants.values() if k in x}) > 1}
    out = []
    for (wl, op, cont, base), cs in comps.items():
        if (wl, op) == an.OPEN:
            continue  # connection open (key derivation) is reported apart, never as a workload
        b, c = _means(groups, (wl, op, base)), _means(groups, (wl, op, cont))
        by_metric = {x["metric"]: x for x in cs}
        setting = ",".join(f"{k}={v}" for k, v in variants[cont].items() if k in varying) or "-"
        n = min(x["n_contender"] for x in cs), min(x["n_baseline"] for x in cs)
        out.append({
            "workload": wl, "operation": op, "setting": setting, "baseline": base, "contender": cont,
            "n": n, "base": b, "cont": c, "comparisons": by_metric, "verdict": an.row_verdict(cs),
        })
    out.sort(key=lambda r: (order.index(r["workload"]) if r["workload"] in order else len(order),
                            r["workload"], r["setting"]))
    return out


def _cells(r: dict) -> list[str]:
    b, c, cm = r["base"], r["cont"], r["comparisons"]

    def ratio(metric):
        x = cm.get(metric)
        return _pct(x["ratio"], x["ci"]) if x else "-"

    def cpu(d):
        if "cpu_user_s" not in d:
            return "-"
        return f"{fmt_seconds(d['cpu_user_s'])} / {fmt_seconds(d['cpu_sys_s'])}"

    def ctx(d):
        if "ctx_voluntary" not in d:
            return "-"
        return f"{fmt_count(d['ctx_voluntary'])}/{fmt_count(d['ctx_involuntary'])}"

    def reads(d):
        if "read_bytes" not in d:
            return "-"
        pages = f" ({fmt_count(d['pages_read'])} pg)" if "pages_read" in d else ""
        return f"{fmt_bytes(d['read_bytes'])}{pages}"

    return [
        r["workload"], r["operation"], r["setting"],
        f"{fmt_seconds(b.get('wall_s'))} → {fmt_seconds(c.get('wall_s'))}", ratio("wall_s"),
        f"{cpu(b)} → {cpu(c)}", ratio("cpu_s"),
        f"{ctx(b)} → {ctx(c)}",
        f"{reads(b)} → {reads(c)}",
        r["verdict"],
    ]


HEADERS = [
    "workload", "op", "variant", "elapsed (mean)", "Δ elapsed [95% CI]", "CPU user / sys (mean)",
    "Δ CPU [95% CI]", "ctx sw vol/invol", "read from storage (pages)", "verdict",
]


def derived_lines(analysis: dict) -> list[str]:
    out = []
    for d in analysis["derived"]:
        ci = d["per_page_cpu_ci"]
        line = (f"{d['workload']}/{d['operation']} {d['contender']}: +{fmt_seconds(d['added_cpu_s'])} CPU for "
                f"{d['pages_read']:,.0f} pages = {fmt_seconds(d['per_page_cpu_s'])} per {d['page_size']}-byte page")
        if ci:
            line += f" [{fmt_seconds(ci[0])}, {fmt_seconds(ci[1])}]"
        if d["decrypt_mb_per_s_per_core"]:
            line += f" -> engine decrypts at {d['decrypt_mb_per_s_per_core']:.0f} MB/s per core"
        if "percent_of_raw_cipher" in d:
            line += (f", {d['percent_of_raw_cipher']:.0f}% of this CPU's raw cipher speed "
                     f"({d['raw_cipher_mb_per_s_per_core']:.0f} MB/s per core)")
        out.append(line)
    return out


def raw_cipher_lines(doc: dict) -> list[str]:
    out = []
    for ps, r in ((doc.get("calibration") or {}).get("raw_cipher") or {}).items():
        out.append(f"raw cipher on this CPU: {r['cipher']}: {r['mb_per_s_per_core']:.0f} MB/s per core "
                   f"({fmt_seconds(r['per_page_cpu_s'])} per page; bulk AES-256-CBC {r['bulk_aes_256_cbc_mb_per_s']:.0f} MB/s, "
                   f"HMAC-SHA512 {r['bulk_hmac_sha512_mb_per_s']:.0f} MB/s; {r['library']})")
    return out


def warning_lines(analysis: dict, limit: int = 8) -> list[str]:
    """Warnings on the figures in the table (elapsed, CPU), few-runs warnings folded into one."""
    keys = {(c["workload"], c["operation"], v) for c in analysis["comparisons"]
            for v in (c["baseline"], c["contender"]) if (c["workload"], c["operation"]) != an.OPEN}
    shown = [s for s in analysis["summaries"] if s["metric"] in ("wall_s", "cpu_s")
             and (s["workload"], s["operation"], s["variant"]) in keys]
    few = sorted({s["n"] for s in shown if s["n"] < 5})
    warns = [f"only {', '.join(map(str, few))} run(s) per variant: the CIs are rough; use --runs 10"] if few else []
    warns += [w for s in shown for w in s["warnings"] if " runs (< " not in w]
    if len(warns) > limit:
        return warns[:limit] + [f"... and {len(warns) - limit} more warnings (see `encbench show FILE --json`)"]
    return warns


def header_lines(doc: dict) -> list[str]:
    env, cfg, ds = doc["environment"], doc["config"], doc.get("dataset") or {}
    flags = ",".join(k for k, v in env["cpu"]["flags"].items() if v) or "none"
    versions = ", ".join(f"{k} {v}" for k, v in env.get("engine_versions", {}).items())
    runs = sum(1 for r in doc["runs"] if not r.get("warmup"))
    warm = sum(1 for r in doc["runs"] if r.get("warmup"))
    lines = [
        f"encbench {doc['encbench_version']} - engine {doc['engine']['name']} ({versions})",
        f"CPU {env['cpu']['model']}, {env['cpu']['logical_cores']} cores, flags {flags}; kernel {env['kernel']}",
        f"data: {ds.get('rows', '?'):,} rows (seed {ds.get('seed', '?')}, {fmt_bytes(cfg['size_bytes'])} target); "
        f"{runs} measured runs + {warm} warmups (each a fresh process and connection), status {doc['status']}",
        f"{doc['engine']['axis']}: baseline {doc['engine']['axis_baseline']}; Δ = contender vs baseline, "
        f"ratio of means with a bootstrap 95% CI; 'significant' = the CI excludes 0%",
    ]
    return lines


def render_text(doc: dict, analysis: dict, console: Console) -> None:
    for line in header_lines(doc):
        console.print(line, highlight=False)
    table = Table(show_lines=False, header_style="bold", pad_edge=False)
    for h in HEADERS:
        table.add_column(h, overflow="fold")
    for r in rows(doc, analysis):
        table.add_row(*_cells(r))
    console.print(table)
    _print_section(console, "Per-page decrypt cost (seed 003)", derived_lines(analysis) + raw_cipher_lines(doc))
    _print_section(console, "Notes", analysis["notes"])
    _print_section(console, "Warnings", warning_lines(analysis))
    if doc["config"].get("command"):
        console.print(f"Reproduce: {doc['config']['command']}", highlight=False, soft_wrap=True)


def _print_section(console: Console, title: str, lines: list[str]) -> None:
    if lines:
        console.print(f"[bold]{title}[/bold]")
        for line in lines:
            console.print(f"  - {line}", highlight=False, soft_wrap=True)


def render_markdown(doc: dict, analysis: dict) -> str:
    out = [f"# encbench results\n"]
    out += [f"- {line}" for line in header_lines(doc)]
    out.append("")
    out.append("| " + " | ".join(HEADERS) + " |")
    out.append("|" + "---|" * len(HEADERS))
    for r in rows(doc, analysis):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |")
    for title, lines in (("Per-page decrypt cost", derived_lines(analysis) + raw_cipher_lines(doc)),
                         ("Notes", analysis["notes"]), ("Warnings", warning_lines(analysis))):
        if lines:
            out += ["", f"## {title}", ""] + [f"- {line}" for line in lines]
    if doc["config"].get("command"):
        out += ["", f"Reproduce: `{doc['config']['command']}`"]
    return "\n".join(out) + "\n"


def render_json(doc: dict, analysis: dict) -> str:
    catalog = metric_catalog()

    def verdict(c: dict) -> str:
        est = stats.Estimate(c["ratio"], tuple(c["ci"]) if c["ci"] else None, c["significant"], 1.0)
        return stats.verdict(catalog[c["metric"]].label if c["metric"] in catalog else c["metric"], est)

    comps = [dict(c, verdict=verdict(c)) for c in analysis["comparisons"]]
    return json.dumps({
        "schema_version": doc["schema_version"], "status": doc["status"], "engine": doc["engine"]["name"],
        "summaries": analysis["summaries"], "comparisons": comps, "derived": analysis["derived"],
        "notes": analysis["notes"],
    }, indent=1)


def command_line(argv: list[str]) -> str:
    """The command that reproduces a result, with any password hidden."""
    return redact("encbench " + " ".join(shlex.quote(a) for a in argv))
