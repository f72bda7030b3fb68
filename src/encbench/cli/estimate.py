"""`encbench estimate`: the CPU at-rest encryption would add to a server, from a measured per-page cost."""

from __future__ import annotations

import argparse
import json
import os

from .. import errors
from .common import workloads


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="source", required=True, metavar="RESULTS", help="a result file with cold at-rest runs")
    p.add_argument("--read-rate", default=None, metavar="RATE", help="the server's physical read rate, e.g. 25MB/s")
    p.add_argument("--live", default=None, metavar="DSN",
                   help="sample the read rate of a running server instead (postgresql:// or mysql://)")
    p.add_argument("--seconds", default="60", help="--live: how long to sample (default 60)")
    p.add_argument("--cores", default=None, help="the server's cores (default: this machine's)")
    p.add_argument("--workload", default=None, metavar="W[,W]",
                   help="whose per-page cost to use; a comma list: the first the file has (default: by --access)")
    p.add_argument("--access", default=None, choices=("sequential", "random"),
                   help="how your workload reads: sequential (scans: the scans' per-page cost) or random (OLTP point "
                        "reads: an oltp run's per-page cost, which includes the per-call set-up a scan amortizes); "
                        "default: sequential when the file has scans, else random")
    p.add_argument("--check", default=None, metavar="OLTP_RESULTS",
                   help="check the per-page model against an oltp result file: what it predicts for that workload's "
                        "own reads per transaction, beside the added CPU measured there, with the error")
    p.add_argument("--write-rate", default=None, metavar="RATE", help="the write side (needs a measured write cost)")
    p.add_argument("--json", action="store_true")


def cmd_estimate(args) -> int:
    from ..analysis import estimate
    from ..analysis import summary as analysis
    from ..lab import results
    from ..util.units import fmt_bytes, parse_positive_int, parse_seconds

    if args.check and not (args.read_rate or args.live):
        return _check_only(args)
    if bool(args.read_rate) == bool(args.live):
        raise errors.UsageError("give either --read-rate RATE or --live DSN (or --check OLTP_RESULTS)",
                                hint="e.g. --read-rate 25MB/s")
    workloads(args.workload)  # a malformed list fails before the file is read
    cores = parse_positive_int(args.cores, what="--cores", maximum=4096) if args.cores else (os.cpu_count() or 1)
    rate = estimate.parse_rate(args.read_rate, what="--read-rate") if args.read_rate else None
    write_rate = estimate.parse_rate(args.write_rate, what="--write-rate") if args.write_rate else None
    seconds = parse_seconds(args.seconds, what="--seconds", minimum=0.1, maximum=3600) if args.live else None
    results.check_readable(args.source)
    doc = results.load(args.source)
    with results.reading(args.source):
        analysed = analysis.analyze(doc)  # re-analysed: an older file gains what this version derives
        entry = estimate.pick(analysed, workloads(args.workload), access=args.access)
        write_entry = estimate.pick(analysed, kind="write") if args.write_rate else None
    live = None
    if args.live:
        live = estimate.live_rate(args.live, seconds)
        rate = live["read_bytes_per_s"]
        source = f"sampled for {live['seconds']:.1f} s from the live server ({live['source']})"
    else:
        source = f"given: --read-rate {args.read_rate}"
    out = estimate.estimate(entry, rate, cores, source=source)
    if live:
        out["live"] = live
    out["checks"] = _checks(args, analysed, entry)
    if write_entry is not None:
        out["write"] = estimate.estimate(write_entry, write_rate, cores, source=f"given: --write-rate {args.write_rate}")
        out["total_added_cores"] = out["added_cores"] + out["write"]["added_cores"]
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    if not out["resolved"]:
        print(f"no estimate: {out['why']}")
        _print_checks(out["checks"])
        return 0
    ci = out["share_ci"]
    print(f"at-rest encryption would add {out['added_cores']:.4f} cores of CPU = {out['share_of_server'] * 100:.2f}% "
          f"of {cores} cores" + (f" (95% CI {ci[0] * 100:.2f}% to {ci[1] * 100:.2f}%)" if ci else ""))
    print(f"  formula: {out['formula']}")
    print(f"  read rate: {fmt_bytes(rate)}/s, {source}")
    if live:
        print(f"  (the server also wrote {fmt_bytes(live['write_bytes_per_s'])}/s; --write-rate estimates that side)")
    print(f"  per-page cost from {args.source}: {out['from']}; assumes {out['assumption']}")
    if "write" in out:
        w = out["write"]
        print(f"write side: {w['added_cores']:.4f} cores = {w['share_of_server'] * 100:.2f}% of {cores} cores; "
              f"together {out['total_added_cores']:.4f} cores")
        print(f"  formula: {w['formula']}")
        print(f"  per-page encrypt cost from {w['from']} (a warm rebuild: an upper bound)")
    _print_checks(out["checks"])
    return 0


def _checks(args, analysed, entry: dict) -> list[dict]:
    """The per-page model checked against real mixes: the oltp runs of the same file, and of --check's file,
    each with the per-page cost this estimate uses (issue 22)."""
    from ..analysis import oltpcost, summary as analysis
    from ..lab import results

    sources = [(args.source, analysed)]
    if args.check:
        results.check_readable(args.check)
        doc = results.load(args.check)
        with results.reading(args.check):
            sources.append((args.check, analysis.analyze(doc)))
    out = []
    for path, a in sources:
        for e in a.get("oltp_costs") or []:
            if e.get("added_cpu_us_per_page_read") is None or entry.get("workload") == oltpcost.WORKLOAD:
                continue
            c = oltpcost.check(e, {"read": entry}, source=str(args.source))
            if c is not None:
                out.append({"file": str(path), "mix": oltpcost.label_of(e), "compared": oltpcost.compared(e), **c})
    if args.check and not any(c["file"] == str(args.check) for c in out):
        _no_check(args.check, entry.get("workload") == oltpcost.WORKLOAD)
    return out


def _no_check(path: str, circular: bool) -> None:
    """--check FILE that gives no check: refused (exit 4), never ignored without a word."""
    if circular:
        raise errors.BadValueError(f"--check {path}: the per-page cost used is itself an oltp run's (random reads): "
                                   "there is nothing independent to check it against",
                                   hint="check a scan's per-page cost: --access sequential")
    raise errors.BadValueError(f"--check {path} has no oltp entry to check against (no oltp run with page reads and "
                               "an added CPU per transaction measured with encryption off and on)",
                               hint="run --workload oltp with a memory share below 100% and give that file")


def _print_checks(checks: list[dict]) -> None:
    for c in checks:
        err = (f"error {c['error_pct']:+.0f}%" + (f" [{c['error_ci_pct'][0]:+.0f}, {c['error_ci_pct'][1]:+.0f}]"
                                                   if c["error_ci_pct"] else "")) if c["error_pct"] is not None \
            else (c.get("unresolved") or "no error figure (the measured added CPU is not above zero)")
        print(f"checked against {c['file']}, {c['mix']} ({c['compared']}): predicts "
              f"{c['predicted_us_per_txn']:.1f} µs added per transaction where {c['measured_us_per_txn']:.1f} were "
              f"measured: {err}")
        for m in c["misses"]:
            print(f"  misses: {m}")


def _check_only(args) -> int:
    """--check without a rate: the model against the oltp file alone (what it would have predicted there)."""
    from ..analysis import estimate
    from ..analysis import summary as analysis
    from ..lab import results

    results.check_readable(args.source)
    doc = results.load(args.source)
    with results.reading(args.source):
        analysed = analysis.analyze(doc)
        entry = estimate.pick(analysed, workloads(args.workload), access=args.access or "sequential")
    why = estimate.unresolved(entry)
    checks = [] if why else _checks(args, analysed, entry)
    if args.json:
        print(json.dumps({"per_page_from": f"{entry['workload']}/{entry['operation']} {entry['contender']}",
                          "resolved": why is None, "why": why, "checks": checks}, indent=1))
        return 0
    if why:
        print(f"no check: {why}")
        return 0
    _print_checks(checks)
    return 0
