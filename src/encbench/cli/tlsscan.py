"""`encbench tls-scan`: what TLS a database server accepts, a baseline to compare with, and --measure."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .. import errors
from ..util.columns import echo, fit, output_width
from .common import parse_settings
from .defaults import data_dir_default
from .history import add_store_argument, check_store, record
from ..engines import ENGINES, tls_scan_engines
from ..report.prometheus import add_argument as add_prometheus_argument
from ..tls import baseline as tlsbaseline
from ..tls import scan as tlsscan
from ..util.units import parse_positive_int, parse_seconds
from ..analysis.headline import tls_scan_line
from ..report import prometheus
from ..tls import fleet
from ..history import record as history
from ..util.redact import redact
from ..report import render as report
from ..tls import measure as tlsmeasure
from ..util import urls
from ..util.files import check_writable, replace_atomic


class _TlsScanEngines:
    """tls-scan --engine's choices, from the engine registry, read only when argparse needs them (so that
    building the parser imports no engine)."""

    def _names(self) -> list[str]:
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
    p.add_argument("--timeout", default=None, metavar="SECONDS",
                   help="time limit of one target's whole scan (default 120; each network wait 10 at most)")

    add_prometheus_argument(p, "the scan results (per target)")
    fleet = p.add_argument_group("many targets")
    fleet.add_argument("--targets", default=None, metavar="FILE",
                       help="scan every target of FILE: one DSN or host:port[/engine] per line, # comments")
    fleet.add_argument("--jobs", default=None, metavar="N", help="--targets: scans at a time (default 8)")
    fleet.add_argument("--baseline-dir", default=None, metavar="DIR",
                       help=f"--targets: compare each target with its own baseline in DIR (saved there on first "
                            f"sight); exit {errors.EXIT_DRIFT} if any target drifted")
    fleet.add_argument("--update-baselines", action="store_true",
                       help="--baseline-dir: save each scan as the target's new baseline after comparing")
    fleet.add_argument("--format", default="text", choices=("text", "jsonl"),
                       help="--targets: a summary table (text) or one JSON object per target (jsonl)")
    fleet.add_argument("--jsonl", default=None, metavar="FILE", help="--targets: also write the JSON Lines to FILE")
    add_store_argument(p)


def cmd_tls_scan(args, argv: list[str]) -> int:
    check_store(args, argv)
    if args.targets:
        return _cmd_fleet(args)
    _check_one_target(args)
    top = parse_positive_int(args.top, what="--top", maximum=1000) if args.top else None
    runs = parse_positive_int(args.runs, what="--runs", maximum=1000)
    baseline = tlsbaseline.load(Path(args.baseline)) if args.baseline else None  # bad files fail before any scan
    if args.save_baseline:
        check_writable(Path(args.save_baseline), what="the baseline",
                               hint="choose a writable regular file for --save-baseline")
    if args.measure:
        check_writable(_tls_measure_output(args), create_parent=not args.output)
    if args.prometheus:
        _check_prometheus(args.prometheus)
    timeout = _timeout(args)
    settings = parse_settings(args.setting) if args.setting else {}
    server = None
    try:
        if args.engine:
            server = _tls_scan_server(args.engine, settings)
            endpoint = tlsscan.Endpoint(ENGINES.get(args.engine).wire_protocol, "127.0.0.1", server.port)
        else:
            endpoint = tlsscan.parse_target(args.target)
        endpoint.timeout = min(tlsscan.TIMEOUT_S, timeout)
        endpoint.deadline = time.monotonic() + timeout
        try:
            result = tlsscan.scan(endpoint)
        except errors.NoTLSError as e:  # a finding, not a failed measurement: in the history too, as --targets keeps it
            _record_no_tls(args, endpoint, e)
            raise
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
        _print_scan(args, result, changes, baseline, measured)
    if args.prometheus:
        one = fleet.Outcome(fleet.Target(0, endpoint), exit_code=errors.EXIT_DRIFT if changes else 0,
                            status="drift" if changes else "ok", scan=result, drift=changes if baseline else None)
        prometheus.write(Path(args.prometheus), prometheus.tls_registry([one]))

    stored = dict(result, target=history.private_target(args.engine)) if args.engine else result  # not its port
    record(args, lambda: history.scan_entry([(stored, changes if baseline else None)], command=args.store_command,
                                            exit_code=errors.EXIT_DRIFT if changes else 0))
    return errors.EXIT_DRIFT if changes else 0


def _check_one_target(args) -> None:
    """One target (TARGET or --engine): the options that go with --targets FILE refused, one way to name it."""
    for name in ("jobs", "baseline_dir", "update_baselines", "jsonl"):
        if getattr(args, name):
            raise errors.UsageError(f"--{name.replace('_', '-')} goes with --targets FILE")
    if args.format != "text":
        raise errors.UsageError("--format goes with --targets FILE", hint="use --json for one target")
    if bool(args.target) == bool(args.engine):
        raise errors.UsageError("give either a TARGET (postgresql://host:port, mysql://host:port) or --engine",
                                hint="e.g. encbench tls-scan --engine postgres")
    if args.setting and not args.engine:
        raise errors.UsageError("--setting configures a private server: use it with --engine")


def _print_scan(args, result: dict, changes: list[str], baseline, measured) -> None:
    """One target's scan in words: the summary line, what it offers, the baseline's drift, the --measure ranking."""
    echo(f"Summary: {tls_scan_line(result, changes if baseline is not None else None, measured)}")
    for line in tlsscan.summary_lines(result):
        echo(line)
    if args.save_baseline:
        echo(f"baseline saved to {args.save_baseline}")
    if baseline is not None:
        real = [c for c in changes if not c.startswith("note:")]
        echo(f"compared with the baseline {args.baseline}: " + ("no change" if not real else
                                                                f"{len(real)} change(s)"))
        for line in changes:
            echo(f"  {line}" if line.startswith("note:") else f"  DRIFT  {line}")
    if measured:
        _print_tls_ranking(measured)


def _record_no_tls(args, endpoint, e: errors.NoTLSError) -> None:
    """--store: a server that answers but offers no TLS, recorded as `--targets` records a target that failed (no
    scan row; the target and its one-line error under the summary's `failed`; the command's exit code)."""
    record(args, lambda: history.scan_entry(
        [], command=args.store_command, engine=endpoint.kind, target=endpoint.label, exit_code=e.exit_code,
        failed=[{"target": endpoint.label, "error": redact(e.one_line())}]))


def _timeout(args) -> float:
    return parse_seconds(args.timeout, what="--timeout", minimum=0.1, maximum=3600) if args.timeout \
        else fleet.DEFAULT_TIMEOUT_S


def _check_prometheus(path: str) -> None:
    prometheus.check_path(path)


def _cmd_fleet(args) -> int:
    """tls-scan --targets FILE: every target scanned, a table or JSON Lines, per-target baselines."""
    if args.target or args.engine:
        raise errors.UsageError("--targets FILE replaces TARGET and --engine", hint="give one of them")
    for name in ("setting", "save_baseline", "baseline", "measure", "json"):
        if getattr(args, name):
            flag = "--" + name.replace("_", "-")
            raise errors.UsageError(f"{flag} takes one target, not --targets",
                                    hint="use --baseline-dir for baselines, --format jsonl for JSON" if name in
                                    ("save_baseline", "baseline", "json") else "scan that server on its own")
    if args.update_baselines and not args.baseline_dir:
        raise errors.UsageError("--update-baselines goes with --baseline-dir DIR")
    jobs = parse_positive_int(args.jobs, what="--jobs", maximum=256) if args.jobs else fleet.DEFAULT_JOBS
    timeout = _timeout(args)
    # every line read before anything is scanned; one that names no target is reported as that line's failure
    targets = fleet.read_targets(Path(args.targets), keep_bad=True)
    if args.jsonl:
        check_writable(Path(args.jsonl), what="the JSON Lines file", hint="choose a writable file for --jsonl")
    if args.prometheus:
        _check_prometheus(args.prometheus)
    baseline_dir = Path(args.baseline_dir) if args.baseline_dir else None
    if baseline_dir is not None:
        fleet.prepare_baseline_dir(baseline_dir)
    outcomes = fleet.scan_all(targets, jobs=jobs, timeout_s=timeout, baseline_dir=baseline_dir,
                              update=args.update_baselines)
    lines = [json.dumps(o.to_dict()) for o in outcomes]
    if args.jsonl:
        replace_atomic(Path(args.jsonl), "".join(line + "\n" for line in lines), what="the JSON Lines file",
                               hint="choose a writable file for --jsonl")
    if args.prometheus:
        prometheus.write(Path(args.prometheus), prometheus.tls_registry(outcomes))
    if args.format == "jsonl":
        for line in lines:
            print(line)
    else:
        for line in fleet.table_lines(outcomes):
            print(line)

    record(args, lambda: history.scan_entry(
        [(o.scan, o.drift) for o in outcomes if o.scan], command=args.store_command,
        target=f"{len(outcomes)} targets ({Path(args.targets).name})", exit_code=fleet.exit_code(outcomes),
        failed=[{"target": o.target.label, "error": o.error} for o in outcomes if not o.scan]))
    return fleet.exit_code(outcomes)


def _tls_scan_server(engine: str, settings: dict):
    """The private server tls-scan --engine scans; a start failure hints at --setting, never at --keep
    (an option of `run` that tls-scan does not have)."""
    try:
        return ENGINES.get(engine).start_scan_server(settings)
    except errors.EngineUnavailableError as e:
        e.hint = ("check the --setting values: the server's own complaint ends the message" if settings
                  else "check that the server binaries work: `encbench run --engine " + engine + " --keep` keeps its log")
        raise


def _tls_measure(args, scan: dict, top, runs, argv) -> dict:
    engine = args.engine or tlsscan.engine_of(scan["engine"]).name
    dsn = None
    if not args.engine:
        if not urls.split(args.target, what="target").username:
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

    echo(f"measured ({m['runs']} runs per suite, vs no TLS; {m['note']}; results in {m['result_file']}):")
    rows = [("grade", "storm elapsed", "bulk MB/s", "connections/s", "suite")]  # the suite last: it may wrap
    rows += [(r["grade"], cell(r["storm elapsed"]), cell(r["bulk MB/s"]), cell(r["connections/s"]), r["tls"])
             for r in m["ranking"] if not r.get("not_measured")]
    for line in fit(rows, output_width(), "  "):
        print(line)
    for r in m["ranking"]:  # a suite the server accepts and the measuring client cannot offer: a line of its own
        if r.get("not_measured"):
            echo(f"  {r['tls']} (grade {r['grade']}): {r['not_measured']}")
    if m["recommendation"]:
        echo(m["recommendation"])
    if m.get("groups"):
        echo(f"handshake cost per key-exchange group (connect, one suite, vs no TLS; {m['groups_result_file']}):")
        for line in fit([("connections/s", "group")] + [(cell(r["connections/s"]), r["tls"]) for r in m["groups"]],
                        output_width(), "  "):
            print(line)
