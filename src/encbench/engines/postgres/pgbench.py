"""pgbench as the roundtrip workload's load driver: found, started with the variant's TLS
parameters, and its per-transaction logs read back as latencies."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ...errors import EngineUnavailableError
from . import server as pg_server

# the libpq parameters of a TLS variant -> pgbench's environment variables
_TLS_ENV = {"sslmode": "PGSSLMODE", "ssl_min_protocol_version": "PGSSLMINPROTOCOLVERSION",
            "ssl_max_protocol_version": "PGSSLMAXPROTOCOLVERSION"}
_CONNINFO_ENV = (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("dbname", "PGDATABASE"),
                 ("password", "PGPASSWORD"))
LOG_PREFIX = "rt"


def find(server) -> str | None:
    """The private server's pgbench, else the one on PATH, else the installed server's."""
    if server is not None and (server.bindir / "pgbench").exists():
        return str(server.bindir / "pgbench")
    found = shutil.which("pgbench")
    if found:
        return found
    try:
        return str(pg_server.find_bindir() / "pgbench")
    except EngineUnavailableError:
        return None


def start(tool: str, *, table: str, rows: int, conninfo: dict, tls_params: dict, appname: str, clients: int,
          seconds: float, scratch: Path, transactions: int | None = None) -> subprocess.Popen:
    """C connections of primary-key SELECTs on `table` for T seconds (or `transactions` each: -t), each logged."""
    script = scratch / "roundtrip.sql"
    script.write_text(f"\\set id random(1, {rows})\nSELECT v FROM {table} WHERE id = :id;\n")
    # PG* variables the user set still apply (as for --dsn); what the DSN says wins
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGSSL", "PGAPPNAME"))}
    for key, var in _CONNINFO_ENV:
        if conninfo.get(key):
            env[var] = str(conninfo[key])
    env["PGAPPNAME"] = appname
    for k, v in tls_params.items():
        env[_TLS_ENV[k]] = v
    prefix = scratch / LOG_PREFIX
    cmd = [tool, "-n", "-M", "prepared", "-f", str(script), "-c", str(clients),
           "-j", str(clients), *(["-t", str(int(transactions))] if transactions else ["-T", str(int(seconds))]),
           "-l", f"--log-prefix={prefix}"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=scratch)


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
    out: list[float] = []
    for path in directory.glob(f"{prefix}.*"):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    out.append(int(parts[2]) / 1000.0)
    return out


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    import numpy as np

    return float(np.percentile(values, q))
