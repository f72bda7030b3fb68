"""--prometheus FILE: results in the node_exporter textfile format (prometheus_client), so cipher drift,
weak grades, leaks and overheads alert where a DBA's other alerts are.

Written atomically (a temporary file in the same directory, then a rename), as node_exporter's textfile
collector requires: it never reads half a file. Only writes down what the commands found: a tls-scan's outcomes, a
leak-check's report (its occurrences per kind of file: LeakReport.occurrences_by_role), a run's comparisons as
the analysis made them; no statistic is computed here. The metrics (docs/RESULTS.md):

tls-scan, per target (label `target`, e.g. postgres://db1:5432; never credentials):
  encbench_tls_scan_success             1 scanned, 0 failed (then only this and the exit code)
  encbench_tls_scan_exit_code           the target's own exit code (0, 14 drift, 10 unreachable, 15, 16)
  encbench_tls_scan_duration_seconds    how long its scan took
  encbench_tls_protocol_accepted        {protocol}: 1 accepted, 0 not (TLSv1 ... TLSv1.3)
  encbench_tls_suites_accepted          number of suites accepted (all protocols)
  encbench_tls_weakest_grade            GRADE_CODES: 1 A, 2 B, 3 C, 4 F (higher is worse), 0 no suite graded
  encbench_tls_drift                    1 drifted from its baseline, 0 not (absent when not compared)
  encbench_tls_certificate_days_left    days until the server certificate expires
leak-check (labels `engine`, `target`: the DSN's host:port or "private"):
  encbench_leak_findings                number of files where the canary was found in plaintext
  encbench_leak_occurrences             {role}: canary occurrences per kind of file
  encbench_leak_scanned_files           files scanned
run (labels `engine`, `workload`, `operation`, `metric`, `variant`, `baseline`):
  encbench_overhead_ratio               each comparison's ratio, variant / baseline (placebo twins left out)
  encbench_overhead_ratio_ci_low/_high  its 95% confidence interval (absent when there is none)
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..errors import BadValueError
from ..util import urls
from ..util.files import check_writable, replace_atomic
from ..tls.scan import PROTOCOLS

GRADE_CODES = {"A": 1, "B": 2, "C": 3, "F": 4}
HINT = "choose a writable file for --prometheus"


def add_argument(p, what: str) -> None:
    """--prometheus FILE on a command's parser (nothing heavy imported: prometheus_client only when writing)."""
    p.add_argument("--prometheus", default=None, metavar="FILE",
                   help=f"also write {what} in node_exporter's textfile format (a *.prom file, replaced atomically)")


def check_path(path: str | None) -> None:
    """Before any work: a *.prom name (node_exporter's textfile collector reads no other) in a writable directory."""
    if not path:
        return

    if not str(path).endswith(".prom"):
        raise BadValueError(f"--prometheus {path}: node_exporter's textfile collector reads *.prom files only",
                            hint="name it e.g. encbench.prom")
    check_writable(Path(path), what="the Prometheus file", hint=HINT)


def write(path: Path, registry) -> None:
    """The registry's samples into path, through a temporary file and a rename (never a half-written file)."""
    from prometheus_client import generate_latest


    replace_atomic(Path(path), generate_latest(registry).decode(), what="the Prometheus file", hint=HINT)


def leak_target(dsn: str | None) -> str:
    """The `target` label of a leak-check: host:port of --dsn (never its user or password), 'private' without."""
    if not dsn:
        return "private"
    if "://" in dsn:
        try:
            u = urls.split(dsn, what="--dsn")
        except BadValueError:  # a DSN the engine's own parser took (libpq's multi-host lists): no label to give
            return "default"
        return f"{u.hostname or 'localhost'}:{u.port or 'default'}"
    pairs = dict(re.findall(r"(host|port)\s*=\s*'?([^'\s]+)", dsn))
    return f"{pairs.get('host', 'localhost')}:{pairs.get('port', 'default')}"


def tls_registry(outcomes):
    """tls-scan results (tls.fleet.Outcome, one per target)."""
    from prometheus_client import CollectorRegistry, Gauge


    reg = CollectorRegistry()
    g = {name: Gauge(name, text, labels, registry=reg) for name, text, labels in (
        ("encbench_tls_scan_success", "1 if the target was scanned, 0 if its scan failed", ["target"]),
        ("encbench_tls_scan_exit_code", "the target's own exit code (docs/RESULTS.md)", ["target"]),
        ("encbench_tls_scan_duration_seconds", "how long the target's scan took", ["target"]),
        ("encbench_tls_protocol_accepted", "1 if the target accepts this TLS protocol version", ["target", "protocol"]),
        ("encbench_tls_suites_accepted", "cipher suites the target accepts, all protocols", ["target"]),
        ("encbench_tls_weakest_grade", "grade of the weakest accepted suite: 1 A, 2 B, 3 C, 4 F, 0 none", ["target"]),
        ("encbench_tls_drift", "1 if the target's TLS differs from its baseline", ["target"]),
        ("encbench_tls_certificate_days_left", "days until the target's certificate expires", ["target"]),
    )}
    for o in outcomes:
        t = o.target.label
        g["encbench_tls_scan_success"].labels(t).set(1 if o.scan is not None else 0)
        g["encbench_tls_scan_exit_code"].labels(t).set(o.exit_code)
        g["encbench_tls_scan_duration_seconds"].labels(t).set(o.seconds)
        if o.scan is None:
            continue
        for proto, _ in PROTOCOLS:
            g["encbench_tls_protocol_accepted"].labels(t, proto).set(1 if proto in o.scan["protocols"] else 0)
        g["encbench_tls_suites_accepted"].labels(t).set(len(o.suites))
        g["encbench_tls_weakest_grade"].labels(t).set(GRADE_CODES.get(o.weakest_grade, 0))
        if o.drift is not None:
            g["encbench_tls_drift"].labels(t).set(1 if o.status == "drift" else 0)
        cert = o.scan.get("certificate") or {}
        if cert.get("days_left") is not None:
            g["encbench_tls_certificate_days_left"].labels(t).set(cert["days_left"])
    return reg


def leak_registry(report, target: str):
    """leak-check's LeakReport of one engine; `target` names the server (leak_target)."""
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    findings = Gauge("encbench_leak_findings", "files where the canary was found in plaintext", ["engine", "target"],
                     registry=reg)
    occurrences = Gauge("encbench_leak_occurrences", "canary occurrences in plaintext, per kind of file",
                        ["engine", "target", "role"], registry=reg)
    scanned = Gauge("encbench_leak_scanned_files", "files scanned for the canary", ["engine", "target"], registry=reg)
    findings.labels(report.engine, target).set(len(report.findings))
    scanned.labels(report.engine, target).set(report.scanned_files)
    for role, n in report.occurrences_by_role().items():
        occurrences.labels(report.engine, target, role).set(n)
    return reg


def run_registry(engine: str, comparisons: list[dict]):
    """A run's headline overheads: every comparison's ratio (finite ones; placebo A/A twins left out)."""
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    labels = ["engine", "workload", "operation", "metric", "variant", "baseline"]
    ratio = Gauge("encbench_overhead_ratio", "variant / baseline of the metric (1 = no overhead)", labels, registry=reg)
    low = Gauge("encbench_overhead_ratio_ci_low", "lower bound of the ratio's 95% confidence interval", labels,
                registry=reg)
    high = Gauge("encbench_overhead_ratio_ci_high", "upper bound of the ratio's 95% confidence interval", labels,
                 registry=reg)
    for c in comparisons:
        if c.get("placebo") or c.get("ratio") is None or not math.isfinite(c["ratio"]):
            continue
        key = (engine, c["workload"], c["operation"], c["metric"], c["contender"], c["baseline"])
        ratio.labels(*key).set(c["ratio"])
        if c.get("ci") and all(x is not None and math.isfinite(x) for x in c["ci"]):
            low.labels(*key).set(c["ci"][0])
            high.labels(*key).set(c["ci"][1])
    return reg
