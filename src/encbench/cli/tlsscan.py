"""`encbench tls-scan`: what TLS a database server accepts, a baseline to compare with, and --measure."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .. import errors
from .common import parse_settings
from .defaults import data_dir_default


class _TlsScanEngines:
    """tls-scan --engine's choices, from the engine registry, read only when argparse needs them (so that
    building the parser imports no engine)."""

    def _names(self) -> list[str]:
        from ..engines import tls_scan_engines

        return [e.name for e in tls_scan_engines()]

    def __iter__(self):
        return iter(self._names())

    def __contains__(self, name) -> bool:
        return name in self._names()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", default=None,
                   help="postgresql://host:port or mysql://host:port (credentials only needed for --measure)")
    p.add_argument("--engine", default=None, choices=_TlsScanEngines(),
                   help="scan a private server encbench starts (no TARGET needed)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="a setting of that private server, e.g. ssl_ciphers=... (repeatable)")
    p.add_argument("--json", action="store_true", help="print the scan as JSON")
    p.add_argument("--save-baseline", default=None, metavar="FILE", help="save the scan as a baseline")
    p.add_argument("--baseline", default=None, metavar="FILE",
                   help=f"compare with a saved baseline: exit {errors.EXIT_DRIFT} on any change")
    p.add_argument("--measure", action="store_true",
                   help="run storm, bulk and connect under every accepted suite and rank them by measured cost")
    p.add_argument("--top", default=None, help="--measure: only the first N suites (TLS 1.3 first, server order)")
    p.add_argument("--runs", default="3", help="--measure: measured runs per suite (default 3)")
    p.add_argument("--quick", action="store_true", help="--measure: small workload sizes")
    p.add_argument("-o", "--output", default=None, help="--measure: result file of the measuring run")


def cmd_tls_scan(args, argv: list[str]) -> int:
    from ..engines import ENGINES
    from ..lab import results
    from ..tls import baseline as tlsbaseline
    from ..tls import scan as tlsscan
    from ..util.units import parse_positive_int

    if bool(args.target) == bool(args.engine):
        raise errors.UsageError("give either a TARGET (postgresql://host:port, mysql://host:port) or --engine",
                                hint="e.g. encbench tls-scan --engine postgres")
    if args.setting and not args.engine:
        raise errors.UsageError("--setting configures a private server: use it with --engine")
    top = parse_positive_int(args.top, what="--top", maximum=1000) if args.top else None
    runs = parse_positive_int(args.runs, what="--runs", maximum=1000)
    baseline = tlsbaseline.load(Path(args.baseline)) if args.baseline else None  # bad files fail before any scan
    if args.save_baseline:
        results.check_writable(Path(args.save_baseline), what="the baseline",
                               hint="choose a writable regular file for --save-baseline")
    if args.measure:
        results.check_writable(_tls_measure_output(args), create_parent=not args.output)
    settings = parse_settings(args.setting) if args.setting else {}
    server = None
    try:
        if args.engine:
            server = _tls_scan_server(args.engine, settings)
            endpoint = tlsscan.Endpoint(ENGINES.get(args.engine).wire_protocol, "127.0.0.1", server.port)
        else:
            endpoint = tlsscan.parse_target(args.target)
        result = tlsscan.scan(endpoint)
        if args.engine:
            result["managed"] = f"a private {args.engine} server started by encbench" + (
                " with " + ", ".join(f"{k}={v}" for k, v in settings.items()) if settings else "")
    finally:
        if server is not None:
            server.stop()
    if args.save_baseline:
        tlsbaseline.save(result, Path(args.save_baseline))
    changes = tlsbaseline.diff(baseline, result) if baseline else []
    measured = None
    if args.measure:
        measured = _tls_measure(args, result, top, runs, argv)
    if args.json:
        out = dict(result, drift=changes if baseline else None)
        if measured:
            out["measure"] = measured
        print(json.dumps(out, indent=1))
    else:
        for line in tlsscan.summary_lines(result):
            print(line)
        if args.save_baseline:
            print(f"baseline saved to {args.save_baseline}")
        if baseline is not None:
            real = [c for c in changes if not c.startswith("note:")]
            print(f"compared with the baseline {args.baseline}: " + ("no change" if not real else
                                                                     f"{len(real)} change(s)"))
            for line in changes:
                print(f"  {line}" if line.startswith("note:") else f"  DRIFT  {line}")
        if measured:
            _print_tls_ranking(measured)
    return errors.EXIT_DRIFT if changes else 0


def _tls_scan_server(engine: str, settings: dict):
    """The private server tls-scan --engine scans; a start failure hints at --setting, never at --keep
    (an option of `run` that tls-scan does not have)."""
    from ..engines import ENGINES

    try:
        return ENGINES.get(engine).start_scan_server(settings)
    except errors.EngineUnavailableError as e:
        e.hint = ("check the --setting values: the server's own complaint ends the message" if settings
                  else "check that the server binaries work: `encbench run --engine " + engine + " --keep` keeps its log")
        raise


def _tls_measure(args, scan: dict, top, runs, argv) -> dict:
    from ..report import render as report
    from ..tls import measure as tlsmeasure
    from ..tls import scan as tlsscan

    engine = args.engine or tlsscan.engine_of(scan["engine"]).name
    dsn = None
    if not args.engine:
        from urllib.parse import urlparse

        if not urlparse(args.target).username:
            raise errors.UsageError("--measure on a server needs credentials in TARGET",
                                    hint="e.g. postgresql://user:password@host:port/db, or use --engine for a private one")
        dsn = args.target
    output = _tls_measure_output(args)
    doc = tlsmeasure.run(scan, engine, dsn=dsn, top=top, runs=runs, quick=args.quick, output=output,
                         data_dir=data_dir_default(), command=report.command_line(argv))
    rows = tlsmeasure.ranking(doc, scan, top)
    groups_out = output.with_name(output.stem + "-groups.json")
    gdoc = tlsmeasure.run_groups(scan, engine, dsn=dsn, runs=runs, quick=args.quick, output=groups_out,
                                 data_dir=data_dir_default(), command=report.command_line(argv))
    return {"result_file": str(output), "engine": engine, "runs": runs, "ranking": rows,
            "groups": tlsmeasure.group_ranking(gdoc) if gdoc else [],
            "groups_result_file": str(groups_out) if gdoc else None,
            "recommendation": tlsmeasure.recommendation(rows),
            "note": "a private server of the same engine is measured (the scanned one is not changed)"
                    if args.engine else "the scanned server is measured through TARGET's credentials"}


def _tls_measure_output(args) -> Path:
    if not getattr(args, "_measure_output", None):
        args._measure_output = Path(args.output) if args.output else Path("encbench-results") / (
            f"tls-measure-{time.strftime('%Y%m%d-%H%M%S')}.json")
    return args._measure_output


def _print_tls_ranking(m: dict) -> None:
    def cell(x) -> str:
        if not x or x["ratio"] is None:
            return "-"
        text = f"{(x['ratio'] - 1) * 100:+.0f}%"
        return text + (f" [{(x['ci'][0] - 1) * 100:+.0f}, {(x['ci'][1] - 1) * 100:+.0f}]" if x["ci"] else "")

    print(f"measured ({m['runs']} runs per suite, vs no TLS; {m['note']}; results in {m['result_file']}):")
    print(f"  {'suite':<44} grade  {'storm elapsed':<20} {'bulk MB/s':<20} connections/s")
    for r in m["ranking"]:
        print(f"  {r['tls']:<44} {r['grade']:<6} {cell(r['storm elapsed']):<20} {cell(r['bulk MB/s']):<20} "
              f"{cell(r['connections/s'])}")
    if m["recommendation"]:
        print(m["recommendation"])
    if m.get("groups"):
        print(f"handshake cost per key-exchange group (connect, one suite, vs no TLS; {m['groups_result_file']}):")
        for r in m["groups"]:
            print(f"  {r['tls']:<44} connections/s {cell(r['connections/s'])}")
