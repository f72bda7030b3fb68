"""The `encbench` command: run, show, compare, list.

Every user error is an EncbenchError: one line on stderr, a distinct exit code
(errors.EXIT_CODES), no traceback (unless --debug).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .. import __version__
from .. import errors
from ..util import interrupts
from ..util.redact import redact

DEFAULT_SIZE = "48MB"
DEFAULT_RUNS = 6  # the verdict minimum (stats.MIN_RUNS); with the warm repeats it keeps ~75-120 s on 2 cores
QUICK_SIZE = "6MB"
QUICK_RUNS = 3
DEFAULT_SEED = 42


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit code 2, no usage dump
        raise errors.UsageError(message, hint=f"see {self.prog} --help")


def _data_dir_default() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "encbench" / "data"


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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="encbench", description="Measure what encryption costs a database, side by side.")
    p.add_argument("--version", action="version", version=f"encbench {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    r = sub.add_parser("run", help="run benchmarks (no arguments: the embedded default suite)")
    r.add_argument("--engine", default=None, help="engine (see `encbench list`); default sqlite")
    r.add_argument("--workload", action="append", default=[], help="workload (repeatable); default: all of the engine's")
    r.add_argument("--variant", action="append", default=[], metavar="KEY=V[,V]",
                   help="narrow (or widen) one variant key, e.g. cache=cold or page_size=1024,4096 (repeatable)")
    r.add_argument("--runs", default=None, help=f"measured runs per variant (default {DEFAULT_RUNS}, --quick {QUICK_RUNS})")
    r.add_argument("--warmups", default="1", help="warmup runs per variant, stored but never in statistics (default 1)")
    r.add_argument("--size", default=None, help=f"data size, e.g. 50MB, 1GB (default {DEFAULT_SIZE}, --quick {QUICK_SIZE})")
    r.add_argument("--quick", action="store_true", help="smoke run: small data, few runs")
    r.add_argument("--margin", default=None, metavar="PCT",
                   help="equivalence margin for 'no cost' verdicts, in percent (default 2: the 90%% CI within ±2%%)")
    r.add_argument("--precision", default=None, metavar="P%",
                   help="after the planned runs, add rounds until every elapsed/CPU comparison's CI is within "
                        "±P points (or --max-time is up; default cap 10m); at least 6 runs per variant")
    r.add_argument("--max-time", default=None, metavar="DURATION",
                   help="time budget of the whole run, e.g. 120s or 5m: rounds are added until it is used "
                        "(or --precision is reached)")
    r.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not pin the worker to a CPU of its own (default: pinned when 2+ CPUs are available)")
    r.add_argument("--seed", default=str(DEFAULT_SEED), help="data generation seed")
    r.add_argument("-o", "--output", default=None, help="result file (default encbench-results/<engine>-<time>.json)")
    r.add_argument("--json", action="store_true", help="print the summaries as JSON instead of the table")
    r.add_argument("--data-dir", default=None, help=f"where generated data is kept and reused (default {_data_dir_default()})")
    r.add_argument("--regenerate", action="store_true", help="rebuild the data files even if they exist")
    r.add_argument("--key-file", default=None,
                   help="file holding the SQLCipher passphrase (default: ENCBENCH_KEY, else a built-in key for synthetic data)")
    r.add_argument("--probe", action="append", default=[], help="probe to use (repeatable); default: all")
    r.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="workload setting, e.g. messages=50000 or seconds=2 (see `encbench list`)")
    r.add_argument("--dsn", default=None,
                   help="measure an existing server instead of starting a private one: postgres (libpq URI or "
                        "key=value; PG* variables also apply) or mariadb (mysql://user:pass@host:port/db)")
    r.add_argument("--keep", action="store_true", help="keep the private server running afterwards, for inspection")
    r.add_argument("--wait-interval", default=None, metavar="SECONDS",
                   help="how often the wait-event sampler polls pg_stat_activity / performance_schema (default 0.1)")
    r.add_argument("--allow-reconfigure", action="store_true",
                   help="allow server-side changes (e.g. ssl_ciphers) on an external --dsn server")
    r.add_argument("--sessions", default=None, metavar="N[,N]",
                   help="hash workload: concurrent sessions per level, e.g. 1,2,4,8 (same as --variant sessions=...)")
    r.add_argument("--function", default=None, metavar="NAME[,NAME]",
                   help="hash workload: the hash function (see `encbench list`; same as --variant function=...)")
    r.add_argument("--rows", default=None, help="hash workload: rows each session hashes (same as --param hash_rows=...)")
    r.add_argument("--profile", action="store_true",
                   help="record a CPU profile (perf) of the engine during the warmup runs, any workload: shares, flame "
                        "graphs next to the results, what an overhead is spent on")
    r.add_argument("--parallel", action="store_true", help="hash workload: allow parallel query (PostgreSQL)")
    r.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="mariadb: a setting of the private server, e.g. file_key_management_encryption_algorithm=AES_CBC "
                        "or innodb_encrypt_log=OFF (repeatable)")

    s = sub.add_parser("show", help="print the table of a result file")
    s.add_argument("file")
    s.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    s.add_argument("--json", action="store_true", help="same as --format json")
    s.add_argument("--margin", default=None, metavar="PCT",
                   help="equivalence margin for 'no cost' verdicts, in percent (default 2: the 90%% CI within ±2%%)")

    c = sub.add_parser("compare", help="compare the same workload/variant across two result files (B vs A)")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--force", action="store_true", help="compare even if the environments differ")
    c.add_argument("--fail-if", action="append", default=[], metavar="COND",
                   help="regression gate, e.g. 'overhead>5%%' (the encryption overhead, B's against A's), "
                        "'elapsed>10%%' or 'cpu>=10%%' (the same variant's time, beyond the noise floor): exit 17 "
                        "when B is shown to be worse than A by more than that (repeatable)")
    c.add_argument("--noise-floor", default=None, metavar="FILE",
                   help="the between-invocation noise floor written by `encbench selftest --save-floor FILE` "
                        "(default: a conservative ±25%% for absolute elapsed/CPU)")
    c.add_argument("--margin", default=None, metavar="PCT",
                   help="equivalence margin for 'no cost' verdicts, in percent (default 2: the 90%% CI within ±2%%)")
    c.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    c.add_argument("--json", action="store_true", help="same as --format json")

    lc = sub.add_parser("leak-check", help="does plaintext reach the disk although encryption at rest is on?")
    lc.add_argument("--engine", default=None, help="engine (default sqlite)")
    lc.add_argument("--dsn", default=None, help="an existing server on this machine (its data directory is read)")
    lc.add_argument("--json", action="store_true", help="print the report as JSON")
    lc.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                    help="mariadb: a server setting of the private server, e.g. innodb_encrypt_log=OFF (repeatable)")

    ts = sub.add_parser("tls-scan", help="what TLS a database server accepts (protocols, suites, groups, certificate)")
    ts.add_argument("target", nargs="?", default=None,
                    help="postgresql://host:port or mysql://host:port (credentials only needed for --measure)")
    ts.add_argument("--engine", default=None, choices=_TlsScanEngines(),
                    help="scan a private server encbench starts (no TARGET needed)")
    ts.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of that private server, e.g. ssl_ciphers=... (repeatable)")
    ts.add_argument("--json", action="store_true", help="print the scan as JSON")
    ts.add_argument("--save-baseline", default=None, metavar="FILE", help="save the scan as a baseline")
    ts.add_argument("--baseline", default=None, metavar="FILE",
                    help=f"compare with a saved baseline: exit {errors.EXIT_DRIFT} on any change")
    ts.add_argument("--measure", action="store_true",
                    help="run storm, bulk and connect under every accepted suite and rank them by measured cost")
    ts.add_argument("--top", default=None, help="--measure: only the first N suites (TLS 1.3 first, server order)")
    ts.add_argument("--runs", default="3", help="--measure: measured runs per suite (default 3)")
    ts.add_argument("--quick", action="store_true", help="--measure: small workload sizes")
    ts.add_argument("-o", "--output", default=None, help="--measure: result file of the measuring run")

    rp = sub.add_parser("report", help="one self-contained HTML file from result files (tables, plots, flame graphs)")
    rp.add_argument("files", nargs="+", metavar="RESULTS")
    rp.add_argument("-o", "--output", default="encbench-report.html", help="the HTML file (default encbench-report.html)")

    es = sub.add_parser("estimate", help="the CPU at-rest encryption would add to a server, from a measured per-page cost")
    es.add_argument("--from", dest="source", required=True, metavar="RESULTS", help="a result file with cold at-rest runs")
    es.add_argument("--read-rate", default=None, metavar="RATE", help="the server's physical read rate, e.g. 25MB/s")
    es.add_argument("--live", default=None, metavar="DSN",
                    help="sample the read rate of a running server instead (postgresql:// or mysql://)")
    es.add_argument("--seconds", default="60", help="--live: how long to sample (default 60)")
    es.add_argument("--cores", default=None, help="the server's cores (default: this machine's)")
    es.add_argument("--workload", default=None, help="whose per-page cost to use (default scan-eq, else the first)")
    es.add_argument("--write-rate", default=None, metavar="RATE", help="the write side (needs a measured write cost)")
    es.add_argument("--json", action="store_true")

    st = sub.add_parser("selftest", help="an A/A check of this machine (about a minute): false positives, noise "
                                         "floor, cold cache, CPU placement")
    st.add_argument("--engine", default=None, help="engine (default sqlite)")
    st.add_argument("--workload", action="append", default=[], help="workload (repeatable; default a reduced suite)")
    st.add_argument("--runs", default=None, help=f"measured runs per variant (default {DEFAULT_RUNS}, as `run`)")
    st.add_argument("--warmups", default="1", help="warmup runs per variant (default 1)")
    st.add_argument("--size", default=None, help=f"data size (default {DEFAULT_SIZE}, as `run`)")
    st.add_argument("--data-dir", default=None, help="where generated data is kept and reused (as `run`)")
    st.add_argument("--save-floor", default=None, metavar="FILE", help="save the noise floor for `compare`")
    st.add_argument("--keep-results", default=None, metavar="DIR", help="keep the two result files in DIR")
    st.add_argument("--json", action="store_true", help="print the figures as JSON")

    lst = sub.add_parser("list", help="list engines, workloads, variants and probes")
    lst.add_argument("--json", action="store_true")
    return p


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, width=None if sys.stdout.isatty() else 200)


# -- run ----------------------------------------------------------------------------

def _read_key(args) -> tuple[str | None, str]:
    if args.key_file:
        try:
            text = Path(args.key_file).read_text().strip()
        except OSError as e:
            raise errors.BadValueError(f"cannot read --key-file {args.key_file}: {e.strerror or e}") from None
        if not text:
            raise errors.BadValueError(f"--key-file {args.key_file} is empty")
        return text, "key-file"
    if os.environ.get("ENCBENCH_KEY"):
        return os.environ["ENCBENCH_KEY"], "ENCBENCH_KEY"
    return None, "default"


def _parse_settings(specs: list[str]) -> dict[str, str]:
    from ..engines.local.server import parse_settings

    return parse_settings(specs)


def cmd_run(args, argv: list[str]) -> int:
    from ..report import render as report
    from ..lab import runner
    from ..engines import DEFAULT_ENGINE, ENGINES
    from ..probes import DEFAULT_PROBES
    from ..util.units import parse_count, parse_positive_int, parse_seconds, parse_size

    engine_name = args.engine or DEFAULT_ENGINE
    engine = ENGINES.get(engine_name)
    from ..lab import precision

    target = precision.parse_points(args.precision) if args.precision else None
    max_time = precision.parse_duration(args.max_time) if args.max_time else None
    adaptive = target is not None or max_time is not None
    runs = parse_positive_int(args.runs or (precision.MIN_RUNS if adaptive else QUICK_RUNS if args.quick
                                            else DEFAULT_RUNS), what="--runs", maximum=1000)
    if adaptive and runs < precision.MIN_RUNS:
        raise errors.BadValueError(f"--runs {runs} is below the {precision.MIN_RUNS} runs per variant a verdict needs "
                                   "with --precision/--max-time", hint=f"use --runs {precision.MIN_RUNS} or more")
    warmups = parse_count(args.warmups, what="--warmups", maximum=100)
    size = parse_size(args.size or (QUICK_SIZE if args.quick else DEFAULT_SIZE))
    seed = parse_positive_int(args.seed, what="--seed", maximum=2**31)
    key, key_source = _read_key(args)
    output = Path(args.output) if args.output else Path("encbench-results") / (
        f"{engine_name}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    engine_options = {name: value for name, value in
                      (("dsn", args.dsn), ("keep", args.keep), ("allow_reconfigure", args.allow_reconfigure),
                       ("wait_interval", args.wait_interval and parse_seconds(args.wait_interval, what="--wait-interval")),
                       ("settings", args.setting and _parse_settings(args.setting)))
                      if value}
    variants = list(args.variant) + [f"{k}={v}" for k, v in (("sessions", args.sessions),
                                                              ("function", args.function)) if v]
    params = list(args.param) + [f"{k}={v}" for k, v in (("hash_rows", args.rows), ("profile", args.profile and 1),
                                                          ("parallel", args.parallel and 1)) if v]
    if (args.sessions or args.function or args.rows or args.parallel or (args.profile and "hash" in engine.workloads)) \
            and not args.workload:
        args.workload = ["hash"]  # the hash options name their workload
    config = runner.RunConfig(
        engine=engine_name,
        workloads=args.workload or list(engine.default_workloads or engine.workloads),
        variant_filters=variants,
        runs=runs, warmups=warmups, size_bytes=size, seed=seed, output=output,
        data_dir=Path(args.data_dir) if args.data_dir else _data_dir_default(),
        probes=args.probe or list(DEFAULT_PROBES),
        regenerate=args.regenerate, key=key, key_source=key_source, quick=args.quick,
        command=report.command_line(argv),
        params=params, engine_options=engine_options,
        precision=target, max_time_s=max_time, pin=args.pin,
    )
    runner.plan(config)  # every name and value checked before anything is created
    from ..lab import results

    results.check_writable(output, create_parent=not args.output)  # only the default directory is created
    err = _console(stderr=True)
    try:
        doc = _run_with_progress(config, err)
    except KeyboardInterrupt as e:
        kept = f"results so far kept in {output}" if getattr(e, "result_written", True) else "nothing measured yet"
        print(f"encbench: interrupted: {kept}", file=sys.stderr)
        return errors.EXIT_INTERRUPTED
    except errors.EncbenchError as e:
        if getattr(e, "result_written", True):  # a configuration error writes no file (nothing was measured)
            e.hint = (e.hint + "; " if e.hint else "") + f"results so far kept in {output}"
        raise
    kept = (doc.get("dataset") or {}).get("kept_server")
    if kept:
        print(f"encbench: the private server is kept (--keep): {kept}", file=sys.stderr)
    analysis = {k: doc.get(k, []) for k in ("summaries", "comparisons", "derived", "attribution", "notes")}
    analysis.update({k: doc[k] for k in ("scaling", "hash_costs", "profiles", "placebo_comparisons") if k in doc})
    if args.margin is not None:  # the file's verdicts use the default margin: judged again (the CIs stay)
        from ..analysis import summary as an_mod

        analysis["comparisons"] = an_mod.rejudge(analysis["comparisons"], _margin(args))
    analysis["files"] = report.write_files(doc, output, analysis.get("scaling", []))
    if args.json:
        print(report.render_json(doc, analysis))
    else:
        report.render_text(doc, analysis, _console())
        from ..lab import runctx

        for line in precision.lines(doc) + runctx.lines(doc):
            print(line)
        print(f"results written to {output} (encbench show {output})", file=sys.stderr)
    return 0


def _run_with_progress(config, err) -> dict:
    from ..lab import runner

    if not err.is_terminal:
        return runner.execute(config)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        task = progress.add_task("preparing", total=None)

        def update(msg: str, done: int, total: int) -> None:
            progress.update(task, description=msg[:60], completed=done, total=total)

        return runner.execute(config, on_progress=update)


# -- show / compare / list -------------------------------------------------------------

def _emit(doc: dict, analysis: dict, fmt: str) -> None:
    from ..report import render as report

    if fmt == "json":
        print(report.render_json(doc, analysis))
    elif fmt == "markdown":
        print(report.render_markdown(doc, analysis), end="")
    else:
        report.render_text(doc, analysis, _console())


def cmd_show(args) -> int:
    from ..analysis import summary as analysis
    from ..lab import results

    from ..report import render as report

    results.check_readable(args.file)  # a FIFO or a device is refused, never opened
    doc = results.load(args.file)
    with results.reading(args.file):
        an = analysis.analyze(doc, margin_pct=_margin(args))
        an["files"] = report.write_files(doc, Path(args.file), an.get("scaling", []), only_missing=True)
        _emit(doc, an, "json" if args.json else args.format)
    return 0


def cmd_compare(args) -> int:
    from ..analysis import compare
    from ..lab import results

    from ..analysis import gate

    conditions = [gate.parse(c) for c in args.fail_if]  # a bad condition fails before the files are read
    margin = _margin(args)
    floor = gate.load_floor(args.noise_floor) if args.noise_floor else None
    results.check_readable(args.a), results.check_readable(args.b)
    a, b = results.load(args.a), results.load(args.b)
    with results.reading(args.a, args.b):
        out = compare.compare(a, b, force=args.force, margin_pct=margin, floor=floor)
        verdict = gate.evaluate(conditions, out["comparisons"]) if conditions else None
        if verdict:
            verdict["conditions"] = [c.text for c in conditions]
            verdict["nothing_judged"] = verdict["checked"] == 0 and bool(verdict["not_judged"])
            out["gate"] = verdict
        fmt = "json" if args.json else args.format
        print(compare.render(out, fmt, args.a, args.b)) if fmt != "table" else compare.render_table(out, args.a, args.b, _console())
    failed = bool(verdict and (verdict["failed"] or verdict["nothing_judged"]))
    if verdict and fmt != "json":
        for line in verdict["failed"]:
            print(f"FAIL  {line}")
        if verdict["not_judged"]:
            print(f"not judged: {len(verdict['not_judged'])} comparisons ({verdict['not_judged'][0]}"
                  + (", ..." if len(verdict["not_judged"]) > 1 else "") + ")")
        state = ("FAILED: nothing could be judged, so the build is not vouched for (use more runs)"
                 if verdict["nothing_judged"] else "FAILED" if verdict["failed"] else "passed")
        print(f"gate: {state} ({', '.join(c.text for c in conditions)}; {verdict['checked']} comparisons checked, "
              f"{verdict['method']})")
    return errors.EXIT_GATE if failed else 0


def _margin(args) -> float:
    from ..analysis import gate

    return gate.parse_margin(args.margin)


def cmd_leak_check(args) -> int:
    import json
    import tempfile

    from ..engines import DEFAULT_ENGINE, ENGINES

    engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
    engine.check_available()
    options = {"dsn": args.dsn} if args.dsn else {}
    if args.setting:
        options["settings"] = _parse_settings(args.setting)
    for name in options:
        if name not in engine.options:
            raise errors.UsageError(f"engine {engine.name} takes no --{name.rstrip('s')}",
                                    hint=f"its options: {', '.join(engine.options) or 'none'}")
    with tempfile.TemporaryDirectory(prefix="encbench-leak-") as work:
        report = engine.leak_check(options, Path(work))
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(f"leak-check, engine {report.engine}: {report.configuration}")
        print(f"scanned {report.scanned_files} files ({report.scanned_bytes:,} bytes) for a "
              f"{report.canary_len}-byte random canary")
        for f in report.findings:
            print(f"  LEAK  {f.role}: {f.path} ({f.occurrences} occurrences) -> {f.fix}")
        if not report.findings:
            print("  no plaintext canary found: nothing leaks in the files checked")
        if report.control:
            found = ", ".join(report.control["found_in"]) or "nowhere (the scan could not have found a leak!)"
            print(f"control ({report.control['configuration']}): the same canary is found in {found}")
        for n in report.notes:
            print(f"note: {n}")
    return errors.EXIT_LEAK if report.leaks else 0


def cmd_tls_scan(args, argv: list[str]) -> int:
    import json

    from ..tls import baseline as tlsbaseline
    from ..tls import scan as tlsscan
    from ..engines import ENGINES
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
        from ..lab import results

        results.check_writable(Path(args.save_baseline), what="the baseline",
                               hint="choose a writable regular file for --save-baseline")
    if args.measure:
        from ..lab import results

        results.check_writable(_tls_measure_output(args), create_parent=not args.output)
    settings = _parse_settings(args.setting) if args.setting else {}
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
                         data_dir=_data_dir_default(), command=report.command_line(argv))
    rows = tlsmeasure.ranking(doc, scan, top)
    groups_out = output.with_name(output.stem + "-groups.json")
    gdoc = tlsmeasure.run_groups(scan, engine, dsn=dsn, runs=runs, quick=args.quick, output=groups_out,
                                 data_dir=_data_dir_default(), command=report.command_line(argv))
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


def cmd_report(args) -> int:
    from ..report import html as html_report
    from ..lab import results

    results.check_writable(Path(args.output), hint="choose a writable -o path")
    for f in args.files:
        results.check_readable(f)
    docs = [(Path(f), results.load(f)) for f in args.files]  # every file checked before anything is written
    with results.reading(*args.files):
        out = html_report.write(docs, Path(args.output))
    print(f"report written to {out} ({out.stat().st_size:,} bytes, self-contained)")
    return 0


def cmd_estimate(args) -> int:
    import json

    from ..analysis import estimate
    from ..lab import results
    from ..util.units import fmt_bytes, parse_positive_int, parse_seconds

    if bool(args.read_rate) == bool(args.live):
        raise errors.UsageError("give either --read-rate RATE or --live DSN", hint="e.g. --read-rate 25MB/s")
    cores = parse_positive_int(args.cores, what="--cores", maximum=4096) if args.cores else (os.cpu_count() or 1)
    rate = estimate.parse_rate(args.read_rate, what="--read-rate") if args.read_rate else None
    write_rate = estimate.parse_rate(args.write_rate, what="--write-rate") if args.write_rate else None
    seconds = parse_seconds(args.seconds, what="--seconds", minimum=0.1, maximum=3600) if args.live else None
    from ..analysis import summary as analysis

    results.check_readable(args.source)
    doc = results.load(args.source)
    with results.reading(args.source):
        doc["derived"] = analysis.analyze(doc)["derived"]  # re-analysed: an older file gains what this version derives
        entry = estimate.pick(doc, args.workload)
        write_entry = estimate.pick(doc, kind="write") if args.write_rate else None
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
    if write_entry is not None:
        out["write"] = estimate.estimate(write_entry, write_rate, cores, source=f"given: --write-rate {args.write_rate}")
        out["total_added_cores"] = out["added_cores"] + out["write"]["added_cores"]
    if args.json:
        print(json.dumps(out, indent=1))
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
    return 0


def cmd_selftest(args, argv: list[str]) -> int:
    from ..report import render as report
    from ..lab import results
    from ..lab import runner
    from ..lab import selftest
    from ..engines import DEFAULT_ENGINE, ENGINES
    from ..util.units import parse_count, parse_positive_int, parse_size

    engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
    settings = selftest.Settings(
        engine=engine.name, workloads=args.workload or selftest.workloads_for(engine),
        runs=parse_positive_int(args.runs or DEFAULT_RUNS, what="--runs", maximum=1000),
        warmups=parse_count(args.warmups, what="--warmups", maximum=100),
        size_bytes=parse_size(args.size or DEFAULT_SIZE), seed=DEFAULT_SEED,
        data_dir=Path(args.data_dir) if args.data_dir else _data_dir_default(),
        keep_dir=Path(args.keep_results) if args.keep_results else None, command=report.command_line(argv))
    runner.plan(selftest.config_for(settings, Path("selftest.json")))  # every name and value checked first
    for path in ([Path(args.save_floor)] if args.save_floor else []) + (
            [settings.keep_dir / "selftest-1.json"] if settings.keep_dir else []):
        results.check_writable(path)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    r = selftest.run(settings, progress=lambda msg: print(f"selftest: {msg}", file=sys.stderr))
    if args.save_floor:
        selftest.save_floor(Path(args.save_floor), r["floor_file"])
    if args.json:
        print(selftest.to_json(r))
    else:
        print("\n".join(selftest.lines(r)))
        if args.save_floor:
            print(f"noise floor saved to {args.save_floor} (encbench compare A B --noise-floor {args.save_floor})")
    return 0 if r["passed"] else errors.EXIT_SELFTEST


def cmd_list(args) -> int:
    import json

    from ..engines import ENGINES
    from ..probes import PROBES
    from ..lab.variants import PLACEBO_KEY
    from ..workloads import WORKLOADS

    data = {
        "engines": {n: e.description for n, e in ENGINES.items()},
        "workloads": {n: w.description for n, w in WORKLOADS.items()},
        "variants": {f"{n}:{k.name}": f"{k.description} (default {','.join(k.default)})"
                     + (f"; workloads {','.join(k.workloads)}" if k.workloads else "")
                     for n, e in ENGINES.items() for k in e.variant_keys}
                    | {"*:placebo": PLACEBO_KEY.description},
        "params": {f"{w.name}:{p.name}": f"{p.description} (default {p.default}, --quick {p.quick})"
                   for n, w in WORKLOADS.items() for p in w.params},
        "probes": {n: p.description for n, p in PROBES.items()},
    }
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    for section, items in data.items():
        print(f"{section}:")
        if not items:
            continue
        width = max(len(k) for k in items)
        for k, v in items.items():
            print(f"  {k:<{width}}  {v}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    interrupts.install()
    try:
        return _main(argv, debug)
    finally:
        interrupts.quiet()  # the work is done: a late signal must not turn it into an interruption


def _main(argv: list[str], debug: bool) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 0
        handler = {"run": lambda: cmd_run(args, argv), "show": lambda: cmd_show(args),
                   "compare": lambda: cmd_compare(args), "list": lambda: cmd_list(args),
                   "leak-check": lambda: cmd_leak_check(args),
                   "tls-scan": lambda: cmd_tls_scan(args, argv), "estimate": lambda: cmd_estimate(args),
                   "report": lambda: cmd_report(args), "selftest": lambda: cmd_selftest(args, argv)}[args.command]
        return handler()
    except errors.EncbenchError as e:
        print(f"encbench: error: {redact(e.one_line())}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("encbench: interrupted", file=sys.stderr)
        return errors.EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: still one line unless --debug
        if interrupts.STOP.is_set():  # a signal landed inside an import or a library, which turned it into this
            print("encbench: interrupted", file=sys.stderr)
            return errors.EXIT_INTERRUPTED
        if debug:
            raise
        print(f"encbench: internal error: {type(e).__name__}: {redact(str(e))} (re-run with --debug for a traceback)",
              file=sys.stderr)
        return 1


def entry() -> None:
    """The `encbench` command: main(), then exit without a late signal undoing a finished run.

    Once main() has returned, everything is written and cleaned up, and the handlers no
    longer raise (interrupts.quiet). Python's shutdown then puts the default handlers back,
    so a SIGINT/SIGTERM arriving in those last milliseconds (to any thread) would kill the
    process with the signal's status instead of main()'s: ignore both from here on.
    """
    import signal

    try:
        code = main()
    except KeyboardInterrupt:  # raised in main()'s own error handling, before it went quiet
        code = errors.EXIT_INTERRUPTED
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)


if __name__ == "__main__":
    entry()
