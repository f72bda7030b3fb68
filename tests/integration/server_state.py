"""A real server's state, taken before and after encbench ran against it (external mode).

PostgreSQL: SHOW ALL, pg_file_settings, the bytes of postgresql.auto.conf, roles, schemas,
extensions. MariaDB: SHOW GLOBAL VARIABLES and the schema list. What moves on its own is left
out and named in IGNORED_* with the reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from integration_helpers import encbench_command

# MariaDB variables whose value moves by itself, with or without encbench (none is a setting
# a client can change for the server): the clock and the position of the binary log / GTID.
IGNORED_MARIADB = {
    "timestamp": "the session clock",
    "gtid_binlog_pos": "advances with any write when the binary log is on",
    "gtid_current_pos": "advances with any write",
    "gtid_binlog_state": "advances with any write",
    "rand_seed1": "per-session random seed", "rand_seed2": "per-session random seed",
}


def pg_state(server) -> dict:
    import psycopg

    with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
        return {
            "show_all": c.execute("SELECT name, setting FROM pg_settings ORDER BY name").fetchall(),
            "file_settings": c.execute("SELECT sourcefile, sourceline, seqno, name, setting, applied, error "
                                       "FROM pg_file_settings ORDER BY seqno").fetchall(),
            "auto_conf": (server.datadir / "postgresql.auto.conf").read_bytes(),
            "roles": c.execute("SELECT rolname, rolsuper, rolcanlogin, rolconfig::text FROM pg_roles "
                               "ORDER BY rolname").fetchall(),
            "schemas": [r[0] for r in c.execute("SELECT nspname FROM pg_namespace ORDER BY nspname")],
            "extensions": [r[0] for r in c.execute("SELECT extname FROM pg_extension ORDER BY extname")],
        }


def maria_state(server) -> dict:
    conn = server.connect()
    try:
        cur = conn.cursor()
        cur.execute("SHOW GLOBAL VARIABLES")
        variables = {k: v for k, v in cur.fetchall() if k not in IGNORED_MARIADB}
        cur.execute("SHOW DATABASES")
        return {"variables": variables, "schemas": sorted(r[0] for r in cur.fetchall())}
    finally:
        conn.close()


def diff(before: dict, after: dict) -> dict:
    """Only what differs (readable in an assertion message)."""
    out = {}
    for key in before:
        b, a = before[key], after.get(key)
        if b == a:
            continue
        if isinstance(b, dict):
            out[key] = {k: (b.get(k), a.get(k)) for k in set(b) | set(a) if b.get(k) != a.get(k)}
        elif isinstance(b, list):
            out[key] = {"gone": [x for x in b if x not in a], "new": [x for x in a if x not in b]}
        else:
            out[key] = (b, a)
    return out


def journals(cli_env: dict) -> list[Path]:
    base = Path(cli_env["XDG_CACHE_HOME"]) / "encbench" / "restore"
    return sorted(base.glob("*.json")) if base.is_dir() else []


def start_encbench(args: list[str], cli_env: dict, cwd: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(encbench_command() + args, env=dict(cli_env, **(env or {})), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_file(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size) and time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"encbench ended (exit {proc.returncode}) before the hook fired: "
                                 f"{proc.stderr.read()[-2000:]}")
        time.sleep(0.02)
    assert path.exists(), "the reconfiguration hook never fired"


def start_paused(args: list[str], cli_env: dict, cwd: Path) -> subprocess.Popen:
    """encbench started with the reconfiguration hook, returned once it holds between the first
    ALTER SYSTEM and the reload (ENCBENCH_TEST_HOOK_RECONFIGURE)."""
    hook = cwd / "hook"
    proc = start_encbench(args, cli_env, cwd, env={"ENCBENCH_TEST_HOOK_RECONFIGURE": f"pause:{hook}"})
    try:
        wait_for_file(hook, proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


def kill_pg(server) -> None:
    """SIGKILL the postmaster and every backend (its process group), as a crash would."""
    os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait()
