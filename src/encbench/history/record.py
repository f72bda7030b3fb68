"""What a store keeps of one command: an Entry (a `runs` row and its child rows), built from what the
command computed: a result document and its analysis (`run`), a scan (`tls-scan`), a leak report
(`leak-check`). Every text that could hold a connection string passes util/redact on the way in."""

from __future__ import annotations

import datetime
import json
import platform
import socket
import ssl
from dataclasses import dataclass, field

from .. import __version__
from ..util.redact import redact, stored_command

GRADE_ORDER = "ABCF"  # tls/scan.grade: A best, F broken


def now_utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Entry:
    """One `runs` row (kind: run, tls-scan, leak-check) and the rows that belong to it."""

    kind: str
    measured_at: str
    engine: str | None
    target: str | None
    command: str | None
    status: str
    exit_code: int | None = None
    result_file: str | None = None
    environment: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    figures: list[dict] = field(default_factory=list)  # kind run: one per comparison
    scans: list[dict] = field(default_factory=list)  # kind tls-scan: one per target
    findings: list[dict] = field(default_factory=list)  # kind leak-check: one per leaking file
    encbench_version: str = __version__
    host: str = field(default_factory=socket.gethostname)


def environment_summary(env: dict | None = None) -> dict:
    """The facts that explain a change of figures between two runs: machine, kernel, libraries."""
    env = env or {}
    cpu = env.get("cpu") or {}
    out = {
        "cpu": cpu.get("model"), "logical_cores": cpu.get("logical_cores"),
        "aes": (cpu.get("flags") or {}).get("aes"),
        "memory_bytes": env.get("memory_bytes"),
        "kernel": env.get("kernel") or platform.release(),
        "python": env.get("python") or platform.python_version(),
        "engine_versions": env.get("engine_versions") or {},
        "openssl": ssl.OPENSSL_VERSION,
    }
    return {k: v for k, v in out.items() if v not in (None, {})}


def private_target(engine: str) -> str:
    """The target of a command that measured a server (or file) encbench made itself."""
    return f"{engine} (private)"


def run_entry(doc: dict, analysis, *, result_file: str | None = None, exit_code: int = 0) -> Entry:
    """A `run`: its comparisons (ratio, CI, verdict) as figures, the headline in the summary."""
    config = doc.get("config") or {}
    engine = (doc.get("engine") or {}).get("name") or config.get("engine")
    dsn = (config.get("engine_options") or {}).get("dsn")
    figures = [{
        "workload": c["workload"], "operation": c["operation"], "variant": c["contender"],
        "baseline": c["baseline"], "metric": c["metric"], "ratio": c.get("ratio"),
        "ci_low": (c.get("ci") or [None, None])[0], "ci_high": (c.get("ci") or [None, None])[1],
        "verdict": c.get("verdict"), "n_baseline": c.get("n_baseline"), "n_contender": c.get("n_contender"),
    } for c in getattr(analysis, "analysis", analysis).shown_comparisons()]  # an Analysis, or the model of one
    return Entry(
        kind="run", measured_at=doc.get("created_at") or now_utc(), engine=engine,
        target=redact(dsn) if dsn else private_target(engine), command=_command(config.get("command")),
        status=doc.get("status") or "complete", exit_code=exit_code, result_file=result_file,
        environment=environment_summary(doc.get("environment")),
        summary={"workloads": config.get("workloads"), "runs": config.get("runs"), "quick": config.get("quick"),
                 "size_bytes": config.get("size_bytes"), "comparisons": len(figures)},
        figures=figures,
    )


def weakest_grade(scan: dict) -> str | None:
    grades = [s["grade"] for suites in (scan.get("suites") or {}).values() for s in suites]
    return max(grades, key=lambda g: GRADE_ORDER.index(g) if g in GRADE_ORDER else -1) if grades else None


def scan_row(scan: dict, drift: list[str] | None) -> dict:
    """One target's scan (tls/scan.scan's dict) and its drift from a baseline (None: none compared)."""
    suites = {proto: [s["suite"] for s in names] for proto, names in (scan.get("suites") or {}).items()}
    default = scan.get("default") or {}
    real = [c for c in drift or [] if not c.startswith("note:")]
    return {
        "target": redact(scan["target"]), "protocols": scan.get("protocols") or [], "suites": suites,
        "suites_count": sum(len(v) for v in suites.values()), "weakest_grade": weakest_grade(scan),
        "default_suite": " ".join(x for x in (default.get("protocol"), default.get("cipher")) if x) or None,
        "drift": drift, "drifted": None if drift is None else bool(real),
    }


def scan_entry(scans: list[tuple[dict, list[str] | None]], *, command: str | None, engine: str | None = None,
               target: str | None = None, exit_code: int = 0, failed: list[dict] | None = None) -> Entry:
    """A `tls-scan` of one or more targets: (scan, drift) each; `failed`: {target, error} of those that could
    not be scanned (kept in the summary)."""
    rows = [scan_row(s, d) for s, d in scans]
    first = scans[0][0] if scans else {}
    return Entry(
        kind="tls-scan", measured_at=first.get("scanned_at") or now_utc(), engine=engine or first.get("engine"),
        target=redact(target) if target else rows[0]["target"] if len(rows) == 1 else f"{len(scans)} targets",
        command=_command(command), status="complete", exit_code=exit_code, environment=environment_summary(),
        summary={"targets": len(rows) + len(failed or []), "managed": first.get("managed"),
                 "failed": failed or []}, scans=rows,
    )


def leak_entry(report, *, dsn: str | None, command: str | None, exit_code: int) -> Entry:
    """A `leak-check` (vocab/leakcheck.LeakReport): each leaking file a finding."""
    return Entry(
        kind="leak-check", measured_at=now_utc(), engine=report.engine,
        target=redact(dsn) if dsn else private_target(report.engine), command=_command(command),
        status="complete", exit_code=exit_code, environment=environment_summary(),
        summary={"configuration": report.configuration, "scanned_files": report.scanned_files,
                 "scanned_bytes": report.scanned_bytes, "leaks": len(report.findings)},
        findings=[{"role": f.role, "path": f.path, "occurrences": f.occurrences, "fix": f.fix}
                  for f in report.findings],
    )


def _command(text: str | None) -> str | None:
    return stored_command(text) if text else None


def to_json(value) -> str:
    """A JSON column's text (redacted: a DSN can hide anywhere in a summary)."""
    return redact(json.dumps(value, sort_keys=True, default=str))
