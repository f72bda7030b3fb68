"""`encbench leak-check`: does plaintext reach the disk although encryption at rest is on?

--dsn: an existing server on this host (MariaDB, PostgreSQL), checked in a schema of encbench's own;
--posture: the static answer from the server's own settings (no canary, no file read).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from .. import errors
from ..report import prometheus
from .common import parse_settings
from .history import add_store_argument, check_store, record


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


def _print_posture(rep) -> None:
    rows = [("", "what", "state", "to encrypt it")]
    mark = {True: "PLAIN", False: "enc", None: "-"}
    rows += [(mark[i.plaintext], i.what, i.state, i.fix) for i in rep.items]
    widths = [max(len(r[k]) for r in rows) for k in range(2)]
    print(f"posture of {rep.engine} at {rep.target}: " + ("PLAINTEXT at rest" if rep.plaintext else
                                                          "everything the settings name is encrypted"))
    for r in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r[:2], widths)) + f"  {r[2]}"
              + (f"  -> {r[3]}" if r[3] else ""))
    for n in rep.notes:
        print(f"note: {n}")


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


def cmd_leak_check(args, argv: list[str] | None = None) -> int:
    from ..engines import DEFAULT_ENGINE, ENGINES

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
    with tempfile.TemporaryDirectory(prefix="encbench-leak-") as work:
        report = engine.leak_check(dict(options, allow_flush_logs=True) if args.allow_flush_logs else options,
                                   Path(work))
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        from ..analysis.headline import leak_check_line

        if report.unchecked and not report.findings:
            print(f"Summary: NOT CLEAN: no canary in the {report.scanned_files} files read, but "
                  f"{len(report.unchecked)} could not be read (not checked: permission) ({report.configuration})")
        else:
            print(f"Summary: {leak_check_line(report)}")
        print(f"leak-check, engine {report.engine}: {report.configuration}")
        print(f"scanned {report.scanned_files} files ({report.scanned_bytes:,} bytes) for a "
              f"{report.canary_len}-byte random canary")
        for step in report.steps:
            print(f"  step: {step}")
        for f in report.findings:
            print(f"  LEAK  {f.role}: {f.path} ({f.occurrences} occurrences) -> {f.fix}")
        for u in report.unchecked:
            print(f"  UNCHECKED  {u}")
        if not report.findings:
            print("  no plaintext canary found in the files checked"
                  + (f"; {len(report.unchecked)} not checked (permission): not clean" if report.unchecked else
                     ": nothing leaks"))
        if report.control:
            found = ", ".join(report.control["found_in"]) or "nowhere (the scan could not have found a leak!)"
            print(f"control ({report.control['configuration']}): the same canary is found in {found}")
        for n in report.notes:
            print(f"note: {n}")
    from ..history import leak_entry

    code = errors.EXIT_LEAK if report.leaks else 0
    if args.prometheus:
        prometheus.write(Path(args.prometheus), prometheus.leak_registry(report, prometheus.leak_target(args.dsn)))
    record(args, lambda: leak_entry(report, dsn=args.dsn, command=args.store_command, exit_code=code))
    return code
