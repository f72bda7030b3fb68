"""pgbench as a load driver: the roundtrip workload's primary-key SELECTs (a script of its own) and the oltp
workload's built-in scripts (tpcb-like, select-only, simple-update) on tables `pgbench -i` made; found,
started with the variant's TLS parameters, and its per-transaction logs (-l) read back as latencies."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ...errors import EngineUnavailableError
from ...util.redact import redact
from . import client
from . import server as pg_server

# the libpq parameters of a TLS variant -> pgbench's environment variables
_TLS_ENV = {"sslmode": "PGSSLMODE", "ssl_min_protocol_version": "PGSSLMINPROTOCOLVERSION",
            "ssl_max_protocol_version": "PGSSLMAXPROTOCOLVERSION"}
_CONNINFO_ENV = (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("dbname", "PGDATABASE"),
                 ("password", "PGPASSWORD"))
LOG_PREFIX = "rt"


def find(server, bindir: Path | None = None) -> str | None:
    """The private server's pgbench (or the one in `bindir`, its binaries'), else the one on PATH, else the
    installed server's; None when there is none."""
    bindir = server.bindir if server is not None else bindir
    if bindir is not None and os.access(Path(bindir) / "pgbench", os.X_OK):
        return str(Path(bindir) / "pgbench")
    found = shutil.which("pgbench")
    if found:
        return found
    try:
        tool = pg_server.find_bindir() / "pgbench"
    except EngineUnavailableError:
        return None
    return str(tool) if os.access(tool, os.X_OK) else None


def environment(conninfo: dict, tls_params: dict, appname: str, settings: dict | None = None) -> dict[str, str]:
    """pgbench's environment: the connection (PG* variables the user set still apply, as for --dsn; what the
    DSN says wins), the variant's TLS, its application name, and session settings (PGOPTIONS: e.g. the
    search_path for pgbench's unqualified table names)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGSSL", "PGAPPNAME"))}
    for key, var in _CONNINFO_ENV:
        if conninfo.get(key):
            env[var] = str(conninfo[key])
    env["PGAPPNAME"] = appname
    for k, v in tls_params.items():
        env[_TLS_ENV[k]] = v
    if settings:
        given = " ".join(f"-c {k}={v}" for k, v in settings.items())
        env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} {given}".strip()
    return env


def start(tool: str, *, table: str, rows: int, conninfo: dict, tls_params: dict, appname: str, clients: int,
          seconds: float, scratch: Path, transactions: int | None = None) -> subprocess.Popen:
    """C connections of primary-key SELECTs on `table` for T seconds (or `transactions` each: -t), each logged."""
    script = scratch / "roundtrip.sql"
    script.write_text(f"\\set id random(1, {rows})\nSELECT v FROM {table} WHERE id = :id;\n")
    prefix = scratch / LOG_PREFIX
    cmd = [tool, "-n", "-M", "prepared", "-f", str(script), "-c", str(clients),
           "-j", str(clients), *(["-t", str(int(transactions))] if transactions else ["-T", str(int(seconds))]),
           "-l", f"--log-prefix={prefix}"]
    return subprocess.Popen(cmd, env=environment(conninfo, tls_params, appname), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=scratch)


# -- the oltp workload: pgbench's built-in scripts on the tables pgbench -i made ---------------------------------

BUILTIN = ("tpcb-like", "select-only", "simple-update")  # pgbench -b NAME; the first is pgbench's default
OLTP_LOG_PREFIX = "oltp"
# the oltp sessions' own settings: a commit does not wait for its WAL to reach the disk (the WAL writer flushes it
# within wal_writer_delay): the mix then costs the server's CPU, not the machine's fsync latency (~10 ms on a
# shared VM's disk, which would leave nothing else to see); the data and the WAL are still written and fsynced
OLTP_SESSION = {"synchronous_commit": "off"}


def version(tool: str) -> str:
    """'15.14' from `pgbench --version` ('pgbench (PostgreSQL) 15.14 (Debian ...)'), or '?'."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    m = re.search(r"\)\s*([0-9][0-9.]*\S*)", out)
    return m.group(1) if m else "?"


def initialize(tool: str, *, scale: int, conninfo: dict, schema: str, cwd: Path, timeout: float = 3600) -> float:
    """`pgbench -i -s SCALE` into `schema` (the tables pgbench makes, unqualified, land in the first schema of the
    search_path): seconds it took. EngineUnavailableError with pgbench's own last line when it fails."""
    import time

    env = environment(conninfo, {"sslmode": "disable"}, "encbench-pgbench-init", {"search_path": schema})
    t0 = time.perf_counter()
    done = subprocess.run([tool, "-i", "-s", str(int(scale)), "-q"], env=env, capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)
    if done.returncode != 0:
        raise EngineUnavailableError(f"pgbench -i -s {scale} failed: {client.tool_error(done.stderr or done.stdout)}",
                                     hint="check the server's free disk space and the role's right to create tables")
    return time.perf_counter() - t0


def oltp_command(tool: str, *, script: str, clients: int, seconds: float, vacuum: bool, log: bool,
                 scratch: Path, new_connections: bool = False) -> list[str]:
    """pgbench -b SCRIPT for C clients (one thread each) for T seconds; vacuum: pgbench's own VACUUM of its four
    tables (and its history truncated) first (-v), else none (-n); log: every transaction in -l files;
    new_connections: a new connection for every transaction (-C), as a client without a pooler does."""
    cmd = [tool, "-b", script, "-c", str(clients), "-j", str(clients), "-T", str(int(seconds)),
           "-v" if vacuum else "-n", *(["-C"] if new_connections else [])]
    if log:
        cmd += ["-l", f"--log-prefix={scratch / OLTP_LOG_PREFIX}"]
    return cmd


def start_oltp(cmd: list[str], *, conninfo: dict, tls_params: dict, appname: str, schema: str,
               scratch: Path) -> subprocess.Popen:
    env = environment(conninfo, tls_params, appname, {"search_path": schema, **OLTP_SESSION})
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=scratch)


def driver_text(cmd: list[str], tool_version: str) -> str:
    """What ran, for the result file: 'PGOPTIONS='-c synchronous_commit=off' pgbench 15.14 -b tpcb-like -c 1 -j 1
    -T 10 -n -l' (the connection is in the environment, never on the command line; the search_path and a log
    prefix's path left out)."""
    args = [a for a in cmd[1:] if not a.startswith("--log-prefix=")]
    session = " ".join(f"-c {k}={v}" for k, v in OLTP_SESSION.items())
    return redact(" ".join([f"PGOPTIONS='{session}' pgbench {tool_version}", *args]))


def oltp_summary(out: str, scratch: Path) -> dict:
    """Transactions, their rate and latency percentiles from pgbench's output and its -l logs in scratch.

    transactions: those the log records as done (a failed one is counted apart); tps: pgbench's own figure
    ('tps = ... (without initial connection time)'), as a DBA reads it."""
    lat, failed = read_log(scratch, OLTP_LOG_PREFIX)
    tps = re.search(r"tps = ([0-9.]+)", out)
    processed = re.search(r"number of transactions actually processed: (\d+)", out)
    connect = re.search(r"(initial|average) connection time = ([0-9.]+) ms", out)  # -C: average, per transaction
    return {
        "transactions": len(lat), "failed_transactions": failed,
        "tps": float(tps.group(1)) if tps else None,
        "pgbench_transactions": int(processed.group(1)) if processed else None,
        "latency_p50_ms": percentile(lat, 50), "latency_p95_ms": percentile(lat, 95),
        "latency_p99_ms": percentile(lat, 99),
        **({f"{connect.group(1)}_connection_ms": float(connect.group(2))} if connect else {}),
    }


def summary(out: str, scratch: Path, seconds: float) -> dict:
    """Queries, rate and latency percentiles from pgbench's output and its logs in scratch."""
    lat = latencies(scratch, LOG_PREFIX)
    tps = re.search(r"tps = ([0-9.]+)", out)
    duration = float(re.search(r"duration: (\d+)", out).group(1)) if "duration:" in out else seconds
    return {
        "queries": len(lat), "qps": len(lat) / duration,
        "latency_p50_ms": percentile(lat, 50), "latency_p95_ms": percentile(lat, 95),
        "latency_p99_ms": percentile(lat, 99),
        "pgbench_tps": float(tps.group(1)) if tps else None,
    }


def latencies(directory: Path, prefix: str) -> list[float]:
    """Per-transaction latencies in ms from pgbench -l logs (client txn latency_us script epoch us)."""
    return read_log(directory, prefix)[0]


def read_log(directory: Path, prefix: str) -> tuple[list[float], int]:
    """(latencies in ms of the transactions done, how many failed) from pgbench -l logs: one line per
    transaction, 'client_id transaction_no time script_no time_epoch time_us [...]', `time` the latency in µs,
    or 'failed' / 'skipped' (PostgreSQL 15+) for a transaction that did not complete."""
    out: list[float] = []
    failed = 0
    for path in sorted(directory.glob(f"{prefix}.*")):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                if parts[2].isdigit():
                    out.append(int(parts[2]) / 1000.0)
                else:
                    failed += 1
    return out, failed


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    import numpy as np

    return float(np.percentile(values, q))
