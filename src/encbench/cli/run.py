"""`encbench run`: measure workloads of one engine, write the result file, print the table."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .. import errors
from ..report import prometheus, render as report
from .common import add_margin_argument, console, margin_pct, parse_settings, workloads
from . import defaults
from .defaults import (DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_SIZE, METER_QUICK_RUNS, METER_QUICK_SIZE, METER_SIZE,
                       METER_WARMUPS, QUICK_BUDGET, QUICK_RUNS, QUICK_SIZE, data_dir_default)
from .history import add_store_argument, check_store, record
from ..lab import precision, runner
from ..vocab.variants import label
from ..util import files
from ..util.columns import echo
from ..engines import DEFAULT_ENGINE, ENGINES
from ..lab.meter import default_probes as meter_probes
from ..probes import DEFAULT_PROBES
from ..util.units import parse_count, parse_positive_int, parse_seconds, parse_size
from ..analysis.summary import Analysis
from ..history import run_entry
from ..lab.precision import clock_text
from ..util.files import check_writable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default=None, help="engine (see `encbench list`); default sqlite")
    p.add_argument("--workload", action="append", default=[], metavar="W[,W]",
                   help="workload (repeatable, or a comma list: storm,bulk); default: all of the engine's")
    p.add_argument("--variant", action="append", default=[], metavar="KEY=V[,V]",
                   help="narrow (or widen) one variant key, e.g. cache=cold or page_size=1024,4096 (repeatable)")
    p.add_argument("--runs", default=None, help=f"measured runs per variant (default {DEFAULT_RUNS}, --quick {QUICK_RUNS}; "
                                                f"--meter instructions --quick {METER_QUICK_RUNS})")
    p.add_argument("--warmups", default=None, help="warmup runs per variant, stored but never in statistics (default 1; "
                                                   f"--meter instructions {METER_WARMUPS})")
    p.add_argument("--size", default=None, help=f"data size, e.g. 50MB, 1GB (default {DEFAULT_SIZE}, --quick {QUICK_SIZE}; "
                                                f"--meter instructions {METER_SIZE}, with --quick {METER_QUICK_SIZE})")
    p.add_argument("--quick", action="store_true",
                   help="alone: the engine's own question (SQLite: a cold scan; PostgreSQL: TLS on queries; MariaDB: "
                        "TDE on a cold scan) on small data, run until its verdict resolves or --budget (default "
                        f"{QUICK_BUDGET}) is spent; with --workload, --variant or --runs: a smoke run ({QUICK_RUNS} runs, "
                        f"no verdict); with --meter instructions: every workload, {METER_QUICK_RUNS} runs per side")
    add_margin_argument(p)
    p.add_argument("--precision", default=None, metavar="P%",
                   help="after the planned runs, add rounds until every elapsed/CPU comparison's CI is within "
                        "±P points (or --max-time is up; default cap 10m); at least 6 runs per variant")
    p.add_argument("--max-time", default=None, metavar="DURATION",
                   help="time budget of the whole run, e.g. 120s or 5m: rounds are added until it is used "
                        "(or --precision is reached)")
    p.add_argument("--budget", default=None, metavar="DURATION",
                   help="time the whole run may take, e.g. 3m: each workload runs 6 runs per variant, then more (up "
                        "to 20) until its verdicts resolve, and no round starts that would end after the budget")
    p.add_argument("--meter", choices=("time", "instructions", "instructions+cache"), default="time",
                   help="what each operation is measured by: time (default: clocks and CPU time) or instructions, "
                        "counted exactly by valgrind's callgrind (20-50x slower; a 1%% change shows on a noisy "
                        "machine; private servers only); instructions+cache adds L1/last-level cache misses "
                        "(about 2x slower again)")
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not pin the worker to a CPU of its own (default: pinned when 2+ CPUs are available)")
    p.add_argument("--seed", default=str(DEFAULT_SEED), help="data generation seed")
    p.add_argument("-o", "--output", default=None, help="result file (default encbench-results/<engine>-<time>.json)")
    p.add_argument("--json", action="store_true", help="print the summaries as JSON instead of the table")
    p.add_argument("--progress", choices=("auto", "bar", "lines", "off"), default="auto",
                   help="auto (default): a progress bar on a terminal, nothing on a pipe or file until the end (its "
                        "errors stay one line); lines: a plain line on stderr as each workload starts and every 10 s "
                        "(CI logs); bar; off")
    p.add_argument("--detail", action="store_true",
                   help="every column of the tables and every warning (as `encbench show FILE --detail`)")
    p.add_argument("--data-dir", default=None, help=f"where generated data is kept and reused (default {data_dir_default()})")
    p.add_argument("--regenerate", action="store_true", help="rebuild the data files even if they exist")
    p.add_argument("--key-file", default=None,
                   help="file holding the SQLCipher passphrase, from which the column workload's key is derived too "
                        "(default: ENCBENCH_KEY, else a built-in key for synthetic data and a random column key)")
    p.add_argument("--probe", action="append", default=[], help="probe to use (repeatable); default: all")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="workload setting, e.g. messages=50000 or seconds=2 (see `encbench list`)")
    p.add_argument("--dsn", default=None,
                   help="measure an existing server instead of starting a private one: postgres (libpq URI or "
                        "key=value; PG* variables also apply) or mariadb (mysql://user:pass@host:port/db)")
    p.add_argument("--keep", action="store_true", help="keep the private server running afterwards, for inspection")
    p.add_argument("--wait-interval", default=None, metavar="SECONDS",
                   help="how often the wait-event sampler polls pg_stat_activity / performance_schema (default 0.1)")
    p.add_argument("--allow-reconfigure", action="store_true",
                   help="allow server-side changes (e.g. ssl_ciphers) on an external --dsn server")
    p.add_argument("--sessions", default=None, metavar="N[,N]",
                   help="hash workload, and the column workload's in-database methods: concurrent sessions per "
                        "level, e.g. 1,2,4,8 (same as --variant sessions=...; alone it means the hash workload)")
    p.add_argument("--function", default=None, metavar="NAME[,NAME]",
                   help="hash workload: the hash function (see `encbench list`; same as --variant function=...)")
    p.add_argument("--rows", default=None, help="hash workload: rows each session hashes (same as --param hash_rows=...)")
    p.add_argument("--method", default=None, metavar="NAME[,NAME]",
                   help="column workload: how the column is encrypted, e.g. none,client-gcm,client-siv (see `encbench "
                        "list`; same as --variant method=...)")
    p.add_argument("--profile", action="store_true",
                   help="record a CPU profile (perf) of the engine during the warmup runs, any workload: shares, flame "
                        "graphs next to the results, what an overhead is spent on")
    p.add_argument("--parallel", action="store_true", help="hash workload: allow parallel query (PostgreSQL)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="mariadb: a setting of the private server, e.g. file_key_management_encryption_algorithm=AES_CBC "
                        "or innodb_encrypt_log=OFF (repeatable)")
    add_store_argument(p)
    prometheus.add_argument(p, "each comparison's ratio (the headline overheads)")


def _default_workloads(engine, variant_filters: list[str]) -> list[str]:
    """Without --workload: the engine's defaults, unless the --variant keys given vary none of them (e.g.
    PostgreSQL's encryption=...): then the workloads those keys vary by default (not one that varies a key only
    when it is named, e.g. oltp's encryption: it runs when --workload names it)."""
    default = list(engine.default_workloads or engine.workloads)
    named = {f.partition("=")[0].strip() for f in variant_filters}
    keys = [k for k in engine.variant_keys if k.name in named and k.workloads]
    if keys and not any(k.for_workload(w) for k in keys for w in default):
        return [w for w in engine.workloads if any(k.for_workload(w) and w not in k.named_only for k in keys)]
    return default


def _question(args, engine, metered: bool) -> bool:
    """--quick alone (no --workload, --variant, --runs or option naming a workload): the engine's own question
    (Engine.quick_workloads, quick_variants), run until its verdicts resolve (lab/precision.Sequential)."""
    return bool(args.quick and not metered and engine.quick_workloads and args.runs is None and not (
        args.workload or args.variant or args.sessions or args.function or args.rows or args.method or args.parallel))


def _print_plan(planned, budget_s: float | None) -> None:
    """A sequential run's plan, first on stderr: what is measured, the rule, the budget."""
    workloads = {wl: [label(v) for v in vs] for wl, vs in planned.by_workload.items()}
    echo("encbench: " + precision.plan_text(workloads, budget_s, precision.Sequential()), file=sys.stderr,
         flush=True)


KEY_FILE_MAX_BYTES = 64 * 2**10  # a passphrase; a larger file is no key file


def _read_key(args) -> tuple[str | None, str]:
    """The passphrase from --key-file or ENCBENCH_KEY: UTF-8 text without a NUL byte (SQL cannot carry one), else
    a one-line BadValueError before anything is generated."""
    if args.key_file:
        text = files.read_text(args.key_file, what="--key-file", limit=KEY_FILE_MAX_BYTES, error=errors.BadValueError,
                               hint="give a file holding the passphrase as UTF-8 text").strip()
        if not text:
            raise errors.BadValueError(f"--key-file {args.key_file} is empty")
        return _checked_key(text, f"--key-file {args.key_file}"), "key-file"
    if os.environ.get("ENCBENCH_KEY"):
        return _checked_key(os.environ["ENCBENCH_KEY"], "ENCBENCH_KEY"), "ENCBENCH_KEY"
    return None, "default"


def _checked_key(key: str, where: str) -> str:
    try:
        key.encode("utf-8")  # an environment variable of bytes that are not UTF-8 arrives as lone surrogates
    except UnicodeEncodeError:
        raise errors.BadValueError(f"{where} is not UTF-8 text", hint="use a passphrase of UTF-8 text") from None
    if "\0" in key:
        raise errors.BadValueError(f"{where} holds a NUL byte, which a database key cannot carry",
                                   hint="use a passphrase of printable text")
    return key


def cmd_run(args, argv: list[str]) -> int:
    config = _run_config(args, argv)
    output, budget = config.output, config.budget_s
    planned = runner.plan(config)  # every name and value checked before anything is created
    check_store(args)
    check_writable(output, create_parent=not args.output)  # only the default directory is created
    prometheus.check_path(args.prometheus)
    err = console(stderr=True)
    found = _file_state(output)
    if config.sequential and (args.progress in ("lines", "bar") or (args.progress == "auto" and err.is_terminal)):
        _print_plan(planned, budget)
    try:
        doc = _run_with_progress(config, err, args.progress)
    except KeyboardInterrupt as e:
        kept = f"results so far kept in {output}" if _written(e, output, found) else "nothing measured yet"
        echo(f"encbench: interrupted: {kept}", file=sys.stderr)
        return errors.EXIT_INTERRUPTED
    except errors.EncbenchError as e:
        if _written(e, output, found):  # a configuration error writes no file (nothing was measured)
            e.hint = (e.hint + "; " if e.hint else "") + f"results so far kept in {output}"
        raise
    _show_run(args, doc, config.engine, output)
    return 0


def _run_config(args, argv: list[str]):
    """The run's configuration from the command line (every amount parsed, the question's workloads and variants,
    the workload an option names); runner.plan checks the names and values."""
    args.workload = workloads(args.workload)
    engine_name = args.engine or DEFAULT_ENGINE
    engine = ENGINES.get(engine_name)
    target = precision.parse_points(args.precision) if args.precision else None
    max_time = precision.parse_duration(args.max_time) if args.max_time else None
    metered = args.meter != "time"
    question = _question(args, engine, metered)
    sequential = question or args.budget is not None  # until the verdicts resolve
    budget = precision.parse_duration(args.budget, what="--budget") if args.budget else (
        precision.parse_duration(QUICK_BUDGET) if sequential else None)
    adaptive = target is not None or max_time is not None or sequential
    runs_text, warmups_text, size_text = _amounts(args, metered, adaptive=adaptive, min_runs=precision.MIN_RUNS)
    runs = parse_positive_int(runs_text, what="--runs", maximum=1000)
    if adaptive and runs < precision.MIN_RUNS:
        raise errors.BadValueError(f"--runs {runs} is below the {precision.MIN_RUNS} runs per variant a verdict needs "
                                   "with --precision/--max-time/--budget (and --quick alone)",
                                   hint=f"use --runs {precision.MIN_RUNS} or more")
    warmups = parse_count(warmups_text, what="--warmups", maximum=100)
    size = parse_size(size_text)
    seed = parse_positive_int(args.seed, what="--seed", maximum=2**31)
    key, key_source = _read_key(args)
    data_dir = defaults.data_dir(args.data_dir)
    output = Path(args.output) if args.output else Path("encbench-results") / (
        f"{engine_name}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    engine_options = {name: value for name, value in
                      (("dsn", args.dsn), ("keep", args.keep), ("allow_reconfigure", args.allow_reconfigure),
                       ("wait_interval", args.wait_interval and parse_seconds(args.wait_interval, what="--wait-interval")),
                       ("settings", args.setting and parse_settings(args.setting)))
                      if value}
    variants = list(args.variant) + [f"{k}={v}" for k, v in (("sessions", args.sessions),
                                                              ("function", args.function),
                                                              ("method", args.method)) if v]
    params = list(args.param) + [f"{k}={v}" for k, v in (("hash_rows", args.rows), ("profile", args.profile and 1),
                                                          ("parallel", args.parallel and 1)) if v]
    if question:
        args.workload, variants = list(engine.quick_workloads), list(engine.quick_variants)
    if args.method and not args.workload:
        args.workload = ["column"]  # --method names its workload (with --sessions too: the column's sweep)
    if (args.sessions or args.function or args.rows or args.parallel or (args.profile and "hash" in engine.workloads)) \
            and not args.workload:
        args.workload = ["hash"]  # so do the hash options
    return runner.RunConfig(
        engine=engine_name,
        workloads=args.workload or _default_workloads(engine, variants),
        variant_filters=variants,
        runs=runs, warmups=warmups, size_bytes=size, seed=seed, output=output,
        data_dir=data_dir, data_dir_given=bool(args.data_dir),
        probes=args.probe or meter_probes("instructions" if metered else "time", list(DEFAULT_PROBES)),
        regenerate=args.regenerate, key=key, key_source=key_source, quick=args.quick,
        command=report.command_line(argv),
        params=params, engine_options=engine_options,
        precision=target, max_time_s=max_time, pin=args.pin, budget_s=budget, sequential=sequential,
        meter="instructions" if metered else "time", cache_sim=args.meter == "instructions+cache",
    )


def _amounts(args, metered: bool, *, adaptive: bool, min_runs: int) -> tuple[str, str, str]:
    """(runs per variant, warm-ups, data size) as given, else the defaults of the run's kind: the words to parse."""
    quick_runs = METER_QUICK_RUNS if metered else QUICK_RUNS
    runs = args.runs or (min_runs if adaptive else quick_runs if args.quick else DEFAULT_RUNS)
    warmups = args.warmups or str(METER_WARMUPS if metered else 1)
    size = args.size or ((METER_QUICK_SIZE if args.quick else METER_SIZE) if metered else
                         (QUICK_SIZE if args.quick else DEFAULT_SIZE))
    return runs, warmups, size


def _show_run(args, doc: dict, engine_name: str, output: Path) -> None:
    """A finished run's views: the kept server, the files, the terminal (or --json), Prometheus, the history."""
    kept = (doc.get("dataset") or {}).get("kept_server")
    if kept:
        echo(f"encbench: the private server is kept (--keep): {kept}", file=sys.stderr)
    analysis = Analysis.from_doc(doc)  # what the runner stored in the file
    if args.margin is not None:  # the file's verdicts use the default margin: judged again (the CIs stay)
        analysis = analysis.rejudged(margin_pct(args))
    analysis.files = report.write_files(doc, output, analysis.scaling or [])
    if args.json:
        print(report.render_json(doc, analysis))
    else:
        out = console()
        report.render_text(doc, analysis, out, detail=args.detail)  # its last lines: precision and run context
        echo(f"results written to {output} (encbench show {output})", file=sys.stderr, keep=[f"encbench show {output}"])
    if args.prometheus:
        prometheus.write(Path(args.prometheus), prometheus.run_registry(engine_name, list(analysis.comparisons)))
    record(args, lambda: run_entry(doc, analysis, result_file=str(output)), str(output))  # after the result file


def _file_state(path: Path) -> tuple | None:
    """What is at path now (inode, mtime, size), None if nothing: tells whether this run wrote it since."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _written(e: BaseException, output: Path, before: tuple | None) -> bool:
    """Did this run write its result file? The runner says so on what it raises (result_written); anything raised
    before its measuring started or after it ended carries no word: then the file must exist and differ from what
    was there before the run (every write is a rename: a new inode). Never "kept in X" for an X that is not there."""
    now = _file_state(output)
    said = getattr(e, "result_written", None)
    return now is not None and (said if said is not None else now != before)


class RunClock:
    """An honest ETA: the measured pace (the time since the first run started over the runs done) times the
    runs left; none before a run is done (data generation and calibration are no pace)."""

    def __init__(self, now=time.monotonic, budget_s: float | None = None):
        self.now, self.first, self.done, self.total = now, None, 0, 0
        self.started, self.budget_s = now(), budget_s  # --quick / --budget: rounds follow until resolved

    def update(self, done: int, total: int, measuring: bool) -> None:
        if measuring and self.first is None:
            self.first = self.now()
        self.done, self.total = done, total

    def eta_s(self) -> float | None:
        if self.first is None or self.done < 1:
            return None
        return (self.now() - self.first) / self.done * max(0, self.total - self.done)

    def eta_text(self) -> str:
        eta = self.eta_s()
        if eta is None:
            return "ETA after the first run"
        minutes, seconds = divmod(int(round(eta)), 60)
        text = f"ETA {minutes}:{seconds:02d}" if minutes else f"ETA {seconds} s"
        if self.budget_s is not None:  # a sequential run: the planned runs, then rounds while a verdict is open

            text += f" (then rounds until resolved: at most {clock_text(self.budget_s - (self.now() - self.started))})"
        return text


def _run_with_progress(config, err, mode: str = "auto") -> dict:
    """One rich bar on a terminal (the run in progress, runs done of planned, elapsed, ETA); a pipe or file gets
    nothing on stderr until the end (its one-line errors stay one line) unless plain lines are asked for."""
    if mode == "lines":
        return runner.execute(config, on_progress=PlainProgress(config).update)
    if mode == "off" or (mode == "auto" and not err.is_terminal):
        return runner.execute(config)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    clock = RunClock(budget_s=config.budget_s)
    with Progress(TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
                  BarColumn(bar_width=20), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
                  console=err, transient=True, expand=True) as progress:
        task = progress.add_task("preparing", total=None, eta="")

        def update(msg: str, done: int, total: int) -> None:
            clock.update(done, total, measuring=_is_run(msg, config))
            progress.update(task, description=msg, completed=done, total=total, eta=clock.eta_text())

        return runner.execute(config, on_progress=update)


class PlainProgress:
    """--progress lines: one plain stderr line when a workload starts and at most every `every_s` seconds between,
    with runs done of planned and the ETA (RunClock): readable in a CI log, no terminal control codes."""

    def __init__(self, config, *, every_s: float = 10.0, now=time.monotonic, out=None):
        self.config, self.every_s, self.now, self.out = config, every_s, now, out
        self.clock, self.workload, self.last = RunClock(now, getattr(config, "budget_s", None)), None, None

    def update(self, msg: str, done: int, total: int) -> None:
        measuring = _is_run(msg, self.config)
        self.clock.update(done, total, measuring)
        workload = msg.split(" ", 1)[0] if measuring else None
        t = self.now()
        if workload == self.workload and self.last is not None and t - self.last < self.every_s and msg != "done":
            return
        self.workload, self.last = workload or self.workload, t
        echo(f"encbench: progress: {done}/{total} runs, {msg}, {self.clock.eta_text()}", file=self.out or sys.stderr,
             flush=True)


def _is_run(msg: str, config) -> bool:
    """Is a progress message the start of a run ('<workload> <variant>'), not a preparation step?"""
    return msg.split(" ", 1)[0] in config.workloads
