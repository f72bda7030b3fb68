"""`encbench estimate`: the encryption bill of a server: each term's rate (given, or read live from the server) times
its measured unit cost, with the total's CI, or "not resolved" naming the term (exit 24)."""

from __future__ import annotations

import argparse
import json
import os

from .. import errors
from .common import workloads
from ..analysis import estimate, unitcost, summary as analysis, oltpcost, calibration
from ..report import bill as bill_words
from ..analysis.bill import Rate, TERM_KINDS
from ..util.units import parse_positive_int, parse_seconds
from ..util.columns import echo
from ..lab import results
from ..analysis.estimate import relative_width
from ..analysis.unitcost import Setup, setup_of
from ..analysis.heldout import beside_bill


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="sources", nargs="+", required=True, metavar="RESULTS",
                   help="calibration files (encbench calibrate -o) or result files whose measured unit costs price "
                        "the bill (cold scans, a warm rebuild, oltp mixes, the connect, bulk and storm labs with tls); "
                        "of several, each term's best-resolved cost")
    p.add_argument("--read-rate", default=None, metavar="RATE", help="the server's physical read rate, e.g. 25MB/s")
    p.add_argument("--write-rate", default=None, metavar="RATE", help="the server's page write rate, e.g. 5MB/s")
    p.add_argument("--rate", action="append", default=[], metavar="TERM=RATE",
                   help="a term's rate given: reads/writes (pages/s or e.g. 25MB/s), log_bytes, temp_bytes, tls_bytes "
                        "(e.g. 2MB/s), tls_handshakes, tls_resumptions, tls_records_in, tls_records_out (per "
                        "second); with --live it fills or replaces the rate read")
    p.add_argument("--live", default=None, metavar="DSN",
                   help="sample every term's rate from a running server's counters (postgresql:// or mysql://), "
                        "read-only")
    p.add_argument("--seconds", default="60", help="--live: how long to sample (default 60)")
    p.add_argument("--side", default=None, choices=("at-rest", "in-transit"),
                   help="bill one side only: at rest (pages, log, temporary files) or in transit (TLS); default both")
    p.add_argument("--all-tls", action="store_true",
                   help="price every session, byte and record as TLS (default: the share on TLS now)")
    p.add_argument("--cores", default=None, help="the server's cores (default: this machine's)")
    p.add_argument("--engine", default=None, metavar="ENGINE",
                   help="the target's engine, without --live (default: the first --from file's)")
    p.add_argument("--page-size", default=None, metavar="BYTES", help="the target's page size, without --live")
    p.add_argument("--other-setup", action="store_true",
                   help="use unit costs measured on another engine, page size or cipher than the target's (a "
                        "per-page cost converted through bytes); refused by default")
    p.add_argument("--workload", default=None, metavar="W[,W]",
                   help="whose per-page read cost to use, e.g. scan-like or oltp:oltp_point_select (a mix of the "
                        "oltp workload); a comma list: the first the file has (default: by --access)")
    p.add_argument("--access", default=None, choices=("sequential", "random"),
                   help="how your workload reads: sequential (scans: the scans' per-page cost) or random (OLTP point "
                        "reads: an oltp run's per-page cost, which includes the per-call set-up a scan amortizes); "
                        "default: sequential when the file has scans, else random")
    p.add_argument("--check", default=None, metavar="OLTP_RESULTS",
                   help="check the per-page model against an oltp result file: what it predicts for that workload's "
                        "own reads per transaction, beside the added CPU measured there, with the error")
    p.add_argument("--json", action="store_true")


def cmd_estimate(args) -> int:
    args.source = args.sources[0]  # the file --check's model and the old per-page path read
    if args.check and not (args.read_rate or args.write_rate or args.rate or args.live):
        return _check_only(args)
    if not (args.read_rate or args.write_rate or args.rate or args.live):
        raise errors.UsageError("give the server's rates: --live DSN, or --read-rate / --write-rate / --rate TERM=RATE "
                                "(or --check OLTP_RESULTS)", hint="e.g. --read-rate 25MB/s")
    if args.live and (args.read_rate or args.write_rate):
        raise errors.UsageError("--live reads the rates from the server: leave out --read-rate and --write-rate",
                                hint="--rate TERM=RATE fills a rate the server does not count")
    workloads(args.workload)  # a malformed list fails before the files are read
    cores = _cores(args)
    cals = [(path, calibration.load(path)) for path in args.sources if calibration.is_calibration(path)]
    files = [_analysed(path) for path in args.sources if not calibration.is_calibration(path)]
    if files:
        args.source = files[0][0]  # --check's model: the first result file's
    costs = _costs(args, files, cals)
    live = estimate.live_rates(args.live, _seconds(args), all_tls=args.all_tls) if args.live else None
    target = _target(args, live, files, cals)
    rates, absent = _rates(args, live, target)
    for _, doc in cals:  # a term the engine never has (the calibration says why) is absent, not "no rate"
        absent.update({k: v for k, v in doc["absent"].items() if k not in rates and k not in absent})
    rates, absent = _sided(args.side, rates, absent)
    # the costs of the terms billed, each refused when measured on another setup (unless --other-setup)
    costs = unitcost.priced({k: v for k, v in costs.items() if k in rates}, target, other_setup=args.other_setup)
    b = estimate.make_bill(costs, rates, absent, cores)
    out = {"model": estimate.model_line(b), "target": target.words(), **b.to_dict(),
           "checks": _checks(args, files[0][1], _read_entry(args, files)) if files else []}
    if live:
        out["live"] = {"seconds": live.seconds, "facts": {k: v for k, v in live.facts.items()}}
    rejected = [c for c in out["checks"] if c.get("error_ci_pct") and not c["error_ci_pct"][0] <= 0 <= c["error_ci_pct"][1]]
    if rejected:  # said at the top: the figure below is no prediction of that mix's whole cost
        c = max(rejected, key=lambda c: abs(c["error_pct"]))
        out["warning"] = (f"warning: checked against a real mix ({c['mix']}, below), the per-page read model is off by "
                          f"{c['error_pct']:+.0f}% [{c['error_ci_pct'][0]:+.0f}, {c['error_ci_pct'][1]:+.0f}]: the bill "
                          "prices only the terms it lists")
    out["heldout"] = beside_bill(target.engine, {t.kind.side for t in b.terms})  # the bill's error on unseen mixes
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        _print_bill(out, b, live)
    return 0 if b.resolved else errors.EXIT_NO_ESTIMATE


def _sided(side: str | None, rates: dict, absent: dict) -> tuple[dict, dict]:
    """--side: the other side's terms left out on request (absent, said on the first line)."""
    if not side:
        return rates, absent
    kept = side.replace("-", " ")
    rates = {k: v for k, v in rates.items() if TERM_KINDS[k].side == kept}
    absent = {k: v for k, v in absent.items() if TERM_KINDS[k].side == kept}
    absent.update({k: f"--side {side}" for k, kind in TERM_KINDS.items() if kind.side != kept})
    return rates, absent


def _cores(args) -> int:
    return parse_positive_int(args.cores, what="--cores", maximum=4096) if args.cores else (os.cpu_count() or 1)


def _seconds(args) -> float:
    return parse_seconds(args.seconds, what="--seconds", minimum=0.1, maximum=3600)


def _analysed(path: str) -> tuple:
    """(path, the analysis, the document) of one --from file (re-analysed: an older file gains what this derives)."""
    results.check_readable(path)
    doc = results.load(path)
    with results.reading(path):
        return path, analysis.analyze(doc), doc


def _costs(args, files, cals=()) -> dict:
    """term -> (UnitCost, Setup): of every file's and calibration's, each term's best-resolved."""
    found: dict[str, list] = {}
    for path, doc in cals:
        for name, cs in calibration.costs_of(doc, path).items():
            found.setdefault(name, []).append(cs)
    for path, analysed, doc in files:
        with _reading(path):
            got = {**unitcost.page_costs(doc, analysed, path, workload=workloads(args.workload) or None,
                                         access=args.access),
                   **unitcost.transit_costs(doc, analysed, path)}
        for name, cs in got.items():
            found.setdefault(name, []).append(cs)

    def width(cs):
        cost = cs[0]
        return relative_width({"per_page_cpu_s": cost.value, "per_page_cpu_ci": cost.ci})

    return {name: min(options, key=width) for name, options in found.items()}


def _reading(path):
    return results.reading(path)


def _read_entry(args, files) -> dict | None:
    """The per-page read cost of the first file (what --check checks), or None where it has none."""
    path, analysed, _ = files[0]
    if not estimate.candidates(analysed, "read"):
        return None
    with _reading(path):
        return estimate.pick(analysed, workloads(args.workload), access=args.access)


def _target(args, live, files, cals=()):
    """The server the bill prices: the live one's setup, else --engine/--page-size, else the first file's (a result
    file's, else a calibration's)."""
    if live:
        f = live.facts
        return Setup(f["engine"], f.get("page_size"), f.get("cipher"))
    if files:
        own = setup_of(files[0][2], _read_entry(args, files))
    else:
        doc = cals[0][1]
        own = Setup(doc["engine"], (doc.get("setup") or {}).get("page_size"), (doc.get("setup") or {}).get("cipher"))
    if not (args.engine or args.page_size):
        return own
    page = parse_positive_int(args.page_size, what="--page-size", maximum=1 << 20) if args.page_size else None
    return Setup(args.engine or own.engine, page or (own.page_size if not args.engine else None),
                 own.cipher if not args.engine else None)


def _rates(args, live, target) -> tuple[dict, dict]:
    """term -> bill.Rate (the live server's, then what the command line gives), and the absent terms."""
    rates = {k: Rate(*v) for k, v in live.rates.items()} if live else {}
    absent = dict(live.absent) if live else {}
    given = [("reads", args.read_rate, "--read-rate"), ("writes", args.write_rate, "--write-rate")]
    given += [(*estimate.split_rate(text), "--rate") for text in args.rate]
    for name, text, option in given:
        if text:
            rates[name] = estimate.given_rate(name, text, option, target.page_size)
            absent.pop(name, None)
    return rates, absent


def _checks(args, analysed, entry: dict | None) -> list[dict]:
    """The per-page model checked against real mixes: the oltp runs of the same file, and of --check's file,
    each with the per-page cost this estimate uses (issue 22)."""
    if entry is None:
        return []
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


def _print_bill(out: dict, b, live) -> None:
    """The bill in words, each line wrapped to the output's width with every term's figure, unit and CI on one line."""
    echo(out["model"])
    if out.get("warning"):
        echo(out["warning"])
    echo(f"target: {out['target']}" + (f"; rates sampled for {live.seconds:.1f} s from the live server"
                                       if live else "; rates given"))
    echo("\n".join(bill_words.lines(b)), keep=bill_words.figures(b))
    _print_checks(out["checks"])
    echo(out["heldout"])


def _print_checks(checks: list[dict]) -> None:
    for c in checks:
        err = (f"error {c['error_pct']:+.0f}%" + (f" [{c['error_ci_pct'][0]:+.0f}, {c['error_ci_pct'][1]:+.0f}]"
                                                   if c["error_ci_pct"] else "")) if c["error_pct"] is not None \
            else (c.get("unresolved") or "no error figure (the measured added CPU is not above zero)")
        echo(f"checked against {c['file']}, {c['mix']} ({c['compared']}): predicts "
             f"{c['predicted_us_per_txn']:.1f} µs added per transaction where {c['measured_us_per_txn']:.1f} were "
             f"measured: {err}")
        for m in c["misses"]:
            echo(f"  misses: {m}")


def _check_only(args) -> int:
    """--check without a rate: the model against the oltp file alone (what it would have predicted there)."""
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
        return errors.EXIT_NO_ESTIMATE if why else 0
    if why:
        echo(f"no check: {why}")
        return errors.EXIT_NO_ESTIMATE
    _print_checks(checks)
    return 0
