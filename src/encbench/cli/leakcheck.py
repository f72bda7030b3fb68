"""`encbench leak-check`: does plaintext reach the disk although encryption at rest is on?

--dsn: an existing server on this host (MariaDB, PostgreSQL), checked in a schema of encbench's own;
--posture: the static answer from the server's own settings (no canary, no file read);
--posture --targets FILE: that answer for every server of a targets file (one DSN a line, tls/fleet.py's
format and parser), concurrently, each target's failure its own (exit code in the JSON Lines).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import errors
from ..util import owners
from ..report import prometheus
from ..util.columns import echo, fit, output_width, wrap
from .common import parse_settings
from .history import add_store_argument, check_store, record
from ..engines import DEFAULT_ENGINE, ENGINES, engine_for_dsn
from ..tls import fleet
from ..util.redact import redact
from ..util.units import parse_positive_int
from ..analysis.headline import leak_check_line
from ..history import leak_entry
from ..util.files import check_writable, replace_atomic


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default=None, help="engine (default sqlite)")
    p.add_argument("--dsn", default=None, help="an existing server on this machine (its data directory is read)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="mariadb: a server setting of the private server, e.g. innodb_encrypt_log=OFF (repeatable)")
    p.add_argument("--posture", action="store_true",
                   help="with --dsn: what the server's own settings say is encrypted at rest (no file is read, "
                        "nothing is written); exit 13 when something is stored in plaintext")
    p.add_argument("--allow-flush-logs", action="store_true",
                   help="with --dsn: also rotate/flush the server's logs to force the canary out (MariaDB FLUSH "
                        "BINARY LOGS / FLUSH ENGINE LOGS, PostgreSQL pg_switch_wal): writes beyond encbench's schema")
    add_store_argument(p)
    prometheus.add_argument(p, "the findings (per engine and target)")
    fleet = p.add_argument_group("many servers (--posture)")
    fleet.add_argument("--targets", default=None, metavar="FILE",
                       help="with --posture: every server of FILE, one DSN per line (mysql://user:pw@host:port/, "
                            "postgresql://...), # comments; exit 13 if any stores plaintext")
    fleet.add_argument("--jobs", default=None, metavar="N", help="--targets: servers read at a time (default 8)")
    fleet.add_argument("--format", default="text", choices=("text", "jsonl"),
                       help="--targets: a summary table (text) or one JSON object per target (jsonl)")
    fleet.add_argument("--jsonl", default=None, metavar="FILE", help="--targets: also write the JSON Lines to FILE")


def _print_posture(rep) -> None:
    rows = [("", "what", "state", "to encrypt it")]
    mark = {True: "PLAIN", False: "enc", None: "-"}
    rows += [(mark[i.plaintext], i.what, i.state, i.fix) for i in rep.items]
    echo(f"posture of {rep.engine} at {rep.target}: " + ("PLAINTEXT at rest" if rep.plaintext else
                                                         "everything the settings name is encrypted"))
    for line in fit([(r[0], r[1], r[2] + (f"  -> {r[3]}" if r[3] else "")) for r in rows], output_width(), "  "):
        print(line)
    for n in rep.notes:
        echo(f"note: {n}")


def cmd_posture(args, engine) -> int:
    if not args.dsn:
        raise errors.UsageError("--posture reads an existing server's settings: it needs --dsn",
                                hint="add --dsn mysql://... or --dsn postgresql://...")
    if args.setting or args.allow_flush_logs:
        raise errors.UsageError("--posture reads settings only: not with --setting or --allow-flush-logs",
                                hint="drop them")
    if args.store or args.prometheus:
        raise errors.UsageError("--posture is not recorded in a store or a Prometheus file yet",
                                hint="drop --store/--prometheus (use --json), or record the canary check without "
                                     "--posture")
    posture = getattr(engine, "posture", None)  # engines that can read an existing server's settings
    if posture is None:
        raise errors.UsageError(f"--posture is not available for engine {engine.name}",
                                hint="it reads a MariaDB or PostgreSQL server's settings")
    rep = posture(args.dsn)
    if args.json:
        print(json.dumps(rep.to_dict(), indent=1))
    else:
        _print_posture(rep)
    return errors.EXIT_LEAK if rep.plaintext else 0


# -- --posture --targets FILE ------------------------------------------------------------------

KEY_ITEMS = ("key management plugin", "encryption at rest in the server")  # PostureItem.what of the key/TDE row


@dataclass(frozen=True)
class PostureTarget:
    line: int  # in the targets file, from 1
    dsn: str  # as written (credentials included): never printed, never stored
    engine: object  # the registry's Engine
    endpoint: object  # tls.scan.Endpoint: host and port, the label without credentials

    @property
    def label(self) -> str:
        return f"{self.engine.dsn_schemes[0]}://{self.endpoint.host}:{self.endpoint.port}"

    @property
    def key(self) -> tuple:
        return self.engine.name, self.endpoint.host.lower(), self.endpoint.port


POSTURE_EXAMPLE = "one DSN per line, e.g. mysql://user@127.0.0.1:3306/ or postgresql://user@db1:5432/postgres"


def posture_target(line: int, body: str, where: str) -> PostureTarget:
    """One line of a --posture targets file: a DSN of an engine that has a posture (from the registry)."""
    able = [e for _, e in ENGINES.items() if getattr(e, "posture", None) and e.dsn_schemes]
    schemes = " or ".join(f"{e.dsn_schemes[0]}://" for e in able)
    engine = engine_for_dsn(body) if "://" in body else None
    if engine is None or engine not in able:
        raise errors.BadValueError(f"{where}: {redact(body)!r} is not a {schemes} DSN",
                                   hint="--posture logs in to each server: " + POSTURE_EXAMPLE)
    return PostureTarget(line, body, engine, fleet.parse_line(body, where))


@dataclass
class PostureOutcome:
    target: PostureTarget
    exit_code: int = 0
    error: str | None = None
    report: object = None  # vocab.leakcheck.PostureReport
    seconds: float = 0.0

    @property
    def plaintext_places(self) -> int | None:
        return sum(i.plaintext is True for i in self.report.items) if self.report else None

    @property
    def key_management(self) -> str | None:
        item = next((i for i in self.report.items if i.what in KEY_ITEMS), None) if self.report else None
        return item.state if item else None

    @property
    def verdict(self) -> str:
        if self.report is None:
            return f"ERROR (exit {self.exit_code})"
        return "PLAINTEXT" if self.report.plaintext else "encrypted"

    def to_dict(self) -> dict:
        """One JSON Lines object: the posture as --json gives it, the target without its credentials."""
        return {"target": self.target.label, "line": self.target.line, "engine": _engine_name(self.target),
                "exit_code": self.exit_code, "verdict": self.verdict, "error": self.error,
                "plaintext_places": self.plaintext_places, "key_management": self.key_management,
                "seconds": round(self.seconds, 3), "posture": self.report.to_dict() if self.report else None}


def _engine_name(target) -> str:
    """The target's engine, '-' for a line of the file that names none (fleet.BadLine)."""
    engine = getattr(target, "engine", None)
    return engine.name if engine is not None else "-"


def posture_one(target: PostureTarget) -> PostureOutcome:
    """One server's posture; an EncbenchError (unreachable, refused, bad DSN) is its outcome, never raised. A line
    of the file that names no server (fleet.BadLine) is a failed target with its own reason and exit code."""
    out, start = PostureOutcome(target), time.monotonic()
    bad = getattr(target, "error", None)
    if bad is not None:
        out.exit_code, out.error = bad.exit_code, redact(bad.one_line())
        return out
    try:
        target.engine.check_available()
        out.report = target.engine.posture(target.dsn)
        out.exit_code = errors.EXIT_LEAK if out.report.plaintext else 0
    except errors.EncbenchError as e:
        out.exit_code, out.error = e.exit_code, redact(e.one_line())
    out.seconds = time.monotonic() - start
    return out


def posture_all(targets: list[PostureTarget], jobs: int) -> list[PostureOutcome]:
    """Every target's outcome, in file order, `jobs` at a time (each connection has its own time limit)."""
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(targets))), thread_name_prefix="posture") as pool:
        futures = [pool.submit(posture_one, t) for t in targets]
        try:
            return [f.result() for f in futures]
        except BaseException:  # Ctrl-C: queued targets never start
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def posture_table(outcomes: list[PostureOutcome]) -> list[str]:
    rows = [("target", "engine", "plaintext", "verdict", "key management / TDE")]  # the free text last: it may wrap
    rows += [(o.target.label, _engine_name(o.target), "-" if o.report is None else str(o.plaintext_places),
              o.verdict, o.key_management or "-") for o in outcomes]
    width = output_width()
    lines = fit(rows, width)
    for o in outcomes:  # the prose under the table, wrapped to the width (the target whole)
        if o.error:
            lines += wrap(f"  {o.target.label} (line {o.target.line}): {o.error}", width)
        for i in (o.report.items if o.report else []):
            if i.plaintext:
                lines += wrap(f"  {o.target.label}: PLAIN  {i.what}: {i.state}" + (f"  -> {i.fix}" if i.fix else ""),
                              width)
    plain = sum(bool(o.report and o.report.plaintext) for o in outcomes)
    failed = sum(o.report is None for o in outcomes)
    lines += wrap(f"{len(outcomes)} target(s): {len(outcomes) - failed} read, {failed} failed, "
                  f"{plain} with plaintext at rest", width)
    return lines


def cmd_posture_targets(args) -> int:
    """leak-check --posture --targets FILE: each server's posture, a table or JSON Lines, exit 13 if any leaks."""
    if not args.posture:
        raise errors.UsageError("--targets goes with --posture (the canary check takes one server, --dsn)",
                                hint="add --posture, or check one server with --dsn")
    for flag, given in (("--dsn", args.dsn), ("--engine", args.engine), ("--setting", args.setting),
                        ("--allow-flush-logs", args.allow_flush_logs), ("--store", args.store),
                        ("--prometheus", args.prometheus)):
        if given:
            raise errors.UsageError(f"{flag} is not for --posture --targets FILE",
                                    hint="each line of FILE is a DSN whose scheme names the engine; drop " + flag)
    if args.json and args.format != "text":
        raise errors.UsageError("--json and --format jsonl: choose one")
    jobs = parse_positive_int(args.jobs, what="--jobs", maximum=256) if args.jobs else fleet.DEFAULT_JOBS
    # a bad line is that line's failure (its reason, exit code); the other servers are still read
    targets = fleet.read_targets(Path(args.targets), make=posture_target, example=POSTURE_EXAMPLE, keep_bad=True)
    if args.jsonl:
        check_writable(Path(args.jsonl), what="the JSON Lines file", hint="choose a writable file for --jsonl")
    outcomes = posture_all(targets, jobs)
    code = fleet.combined_exit_code((o.exit_code for o in outcomes), errors.EXIT_LEAK)
    lines = [json.dumps(o.to_dict()) for o in outcomes]
    if args.jsonl:
        replace_atomic(Path(args.jsonl), "".join(line + "\n" for line in lines), what="the JSON Lines file",
                               hint="choose a writable file for --jsonl")
    if args.json:
        print(json.dumps({"exit_code": code, "targets": [o.to_dict() for o in outcomes]}, indent=1))
    else:
        for line in lines if args.format == "jsonl" else posture_table(outcomes):
            print(line)
    return code


def cmd_leak_check(args, argv: list[str] | None = None) -> int:
    if args.targets:
        return cmd_posture_targets(args)
    for name in ("jobs", "jsonl"):
        if getattr(args, name):
            raise errors.UsageError(f"--{name} goes with --posture --targets FILE")
    if args.format != "text":
        raise errors.UsageError("--format goes with --posture --targets FILE", hint="use --json for one server")
    engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
    engine.check_available()
    if args.posture:
        return cmd_posture(args, engine)
    check_store(args, argv)
    prometheus.check_path(args.prometheus)
    options = {"dsn": args.dsn} if args.dsn else {}
    if args.allow_flush_logs:
        if not args.dsn:
            raise errors.UsageError("--allow-flush-logs is for an existing server (--dsn)",
                                    hint="add --dsn, or drop --allow-flush-logs")
    if args.setting:
        options["settings"] = parse_settings(args.setting)
    for name in options:
        if name not in engine.options:
            raise errors.UsageError(f"engine {engine.name} takes no --{name.rstrip('s')}",
                                    hint=f"its options: {', '.join(engine.options) or 'none'}")
    with owners.temporary_dir("encbench-leak-") as work:  # owned: reclaimed after a kill
        report = engine.leak_check(dict(options, allow_flush_logs=True) if args.allow_flush_logs else options,
                                   Path(work))
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        _print_report(report)

    code = errors.EXIT_LEAK if report.leaks else 0
    if args.prometheus:
        prometheus.write(Path(args.prometheus), prometheus.leak_registry(report, prometheus.leak_target(args.dsn)))
    record(args, lambda: leak_entry(report, dsn=args.dsn, command=args.store_command, exit_code=code))
    return code


def _print_report(report) -> None:
    """The canary check in words (vocab/leakcheck.LeakReport), each line wrapped to the width (util/columns.echo)."""
    if report.unchecked and not report.findings:
        echo(f"Summary: NOT CLEAN: no canary in the {report.scanned_files} files read, but "
             f"{len(report.unchecked)} places were not checked ({report.configuration})")
    else:
        echo(f"Summary: {leak_check_line(report)}")
    echo(f"leak-check, engine {report.engine}: {report.configuration}")
    echo(f"scanned {report.scanned_files} files ({report.scanned_bytes:,} bytes) for a "
         f"{report.canary_len}-byte random canary")
    for step in report.steps:
        echo(f"  step: {step}")
    for where, n in report.skipped.items():
        echo(f"  skipped {n:,} entries in {where} that are not the server's own (never opened)")
    for f in report.findings:
        echo(f"  LEAK  {f.role}: {f.path} ({f.occurrences} occurrences) -> {f.fix}", keep=[f.path])
    for u in report.unchecked:
        echo(f"  UNCHECKED  {u}")
    if not report.findings:
        echo("  no plaintext canary found in the files checked"
             + (f"; {len(report.unchecked)} not checked: not clean" if report.unchecked else ": nothing leaks"))
    if report.control:
        found = ", ".join(report.control["found_in"]) or "nowhere (the scan could not have found a leak!)"
        echo(f"control ({report.control['configuration']}): the same canary is found in {found}")
    for n in report.notes:
        echo(f"note: {n}")
