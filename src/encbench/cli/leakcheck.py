"""`encbench leak-check`: does plaintext reach the disk although encryption at rest is on?"""

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
    add_store_argument(p)
    prometheus.add_argument(p, "the findings (per engine and target)")


def cmd_leak_check(args, argv: list[str] | None = None) -> int:
    from ..engines import DEFAULT_ENGINE, ENGINES

    engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
    engine.check_available()
    check_store(args, argv)
    prometheus.check_path(args.prometheus)
    options = {"dsn": args.dsn} if args.dsn else {}
    if args.setting:
        options["settings"] = parse_settings(args.setting)
    for name in options:
        if name not in engine.options:
            raise errors.UsageError(f"engine {engine.name} takes no --{name.rstrip('s')}",
                                    hint=f"its options: {', '.join(engine.options) or 'none'}")
    with tempfile.TemporaryDirectory(prefix="encbench-leak-") as work:
        report = engine.leak_check(options, Path(work))
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        from ..analysis.headline import leak_check_line

        print(f"Summary: {leak_check_line(report)}")
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
    from ..history import leak_entry

    code = errors.EXIT_LEAK if report.leaks else 0
    if args.prometheus:
        prometheus.write(Path(args.prometheus), prometheus.leak_registry(report, prometheus.leak_target(args.dsn)))
    record(args, lambda: leak_entry(report, dsn=args.dsn, command=args.store_command, exit_code=code))
    return code
