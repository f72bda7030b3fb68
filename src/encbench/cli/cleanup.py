"""`encbench cleanup`: remove what killed runs left (lab/reclaim, as every command that makes things does at its
start, here with one line per part): what their owner records name (util/owners: processes, directories, files), the
filesystems encbench made (host/encfs), the private servers it started (util/leftovers.reclaim_servers), their working
directories (util/leftovers.reclaim: `scratch-*` in the data directory, `pymp-*` and the filesystems' directories in
the temporary directory) and the memory cgroups those servers ran in (host/memcg: removed once the servers are
stopped).

Only what the ledger or an owner record in a directory names, and only for runs whose process is
gone (pid + start time): a live run's mounts, servers and directories, any mount encbench did not
create and any directory without an owner record are never touched. A dead run's server still
running is stopped (SIGTERM, then SIGKILL) only when its command line points into its directory.

`--forget-journal PATH|all` (no root needed, nothing else done): drop a --dsn restore journal that a
restore kept because the server no longer holds what encbench set (a DBA changed it since); the
server is not touched (engines/local/restore_journal.forget).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from ..errors import BadValueError, FilesystemUnavailableError
from ..host.encfs import ledger
from ..lab import reclaim
from ..util import proc
from ..util.columns import echo
from ..engines.local import restore_journal


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .defaults import data_dir_default

    p.add_argument("--json", action="store_true", help="print what was removed as JSON")
    p.add_argument("--data-dir", default=None,
                   help=f"the data directory whose scratch-* directories of dead runs to remove (default {data_dir_default()})")
    p.add_argument("--forget-journal", metavar="PATH|all", default=None,
                   help="only drop a --dsn restore journal (the path a note named, or `all` of dead runs) without "
                        "restoring anything: once you have decided about a setting or database it kept")


def cmd_cleanup(args) -> int:
    if args.forget_journal is not None:
        return _forget_journal(args.forget_journal, args.json)
    if os.geteuid() != 0:  # the ledger, the mounts and the loop devices are root's
        raise FilesystemUnavailableError(f"cleanup needs root (running as uid {os.geteuid()})",
                                         hint="run encbench cleanup as root")
    from .defaults import data_dir_default

    # in order: processes, servers, filesystems, the records' paths, directories, memory cgroups (lab/reclaim)
    done = reclaim.reclaim(Path(args.data_dir) if args.data_dir else data_dir_default())
    servers, groups = done.rows.get("servers", []), done.rows.get("memory_cgroups", [])
    owned = [{"owner_pid": p.owner_pid, "record": str(p.record), "stopped": [pid for pid, _ in p.stopped],
              "removed": p.removed, "problems": p.problems} for p in done.rows.get("owners", [])]
    directories = [{"dir": str(d), "owner_pid": pid} for d, pid in done.rows.get("directories", [])] + [
        {"dir": d, "owner_pid": p["owner_pid"]} for p in owned for d in p["removed"]]
    live = [r["id"] for r in ledger.records() if _is_live(r)]
    rows = [{"id": r["id"], "kind": r.get("kind"), "owner_pid": r["owner"].get("pid"), "workdir": r["workdir"],
             "removed": not problems, "problems": problems} for r, problems in done.rows.get("filesystems", [])]
    if args.json:
        print(json.dumps({"reclaimed": rows, "live_kept": live, "servers": servers, "directories": directories,
                          "memory_cgroups": groups, "owner_records": owned}, indent=1))
    else:
        for p in done.rows.get("owners", []):
            for pid, what in p.stopped:
                echo(f"{what} pid {pid} (dead pid {p.owner_pid}): stopped")
            for problem in p.problems:
                echo(f"owner record {p.record} (dead pid {p.owner_pid}): INCOMPLETE: {problem}")
        for row in servers:
            echo(_server_line(row))
        for row in directories:
            echo(f"directory {row['dir']} (dead pid {row['owner_pid']}): removed")
        for row in rows:
            state = "removed" if row["removed"] else "INCOMPLETE: " + "; ".join(row["problems"])
            echo(f"{row['id']} (dead pid {row['owner_pid']}) {row['workdir']}: {state}")
        for row in groups:
            state = "removed" if row["removed"] else "INCOMPLETE: " + "; ".join(row["problems"])
            echo(f"memory cgroup {row['path']} (dead pid {row['owner_pid']}): {state}")
        echo(f"cleanup: {sum(r['removed'] for r in rows)} removed, "
             f"{sum(not r['removed'] for r in rows)} incomplete, {len(live)} of live runs kept"
             + (f"; servers: {sum(r['removed'] for r in servers)} removed, "
                f"{sum(not r['removed'] for r in servers)} incomplete" if servers else "")
             + (f"; directories: {len(directories)} removed" if directories else "")
             + (f"; memory cgroups: {sum(r['removed'] for r in groups)} removed, "
                f"{sum(not r['removed'] for r in groups)} incomplete" if groups else ""))
    if any(not r["removed"] for r in rows + servers + groups) or any(p["problems"] for p in owned):
        raise FilesystemUnavailableError("some leftovers could not be removed (listed above)",
                                         hint="stop what still uses them and run encbench cleanup again")
    return 0


def _server_line(row: dict) -> str:
    stopped = f"stopped pid {', '.join(map(str, row['stopped']))}, " if row["stopped"] else ""
    state = "removed" if row["removed"] else "INCOMPLETE: " + "; ".join(row["problems"])
    return f"server {row['dir']} (dead pid {row['owner_pid']}): {stopped}{state}"


def _is_live(record: dict) -> bool:
    owner = record.get("owner") or {}
    return proc.owner_pid(owner) is not None and owner["pid"] != os.getpid() and proc.owner_alive(owner)


def _forget_journal(which: str, as_json: bool) -> int:
    """The journal(s) deleted, the server untouched; a path that is not a dead run's journal: one line, exit 4."""
    deleted, refused = restore_journal.forget(which)
    if as_json:
        print(json.dumps({"forgotten": [{"path": str(j.path), "server": j.describe()} for j in deleted],
                          "not_forgotten": refused}, indent=1))
    else:
        for j in deleted:
            echo(f"journal {j.path} ({j.describe()}): forgotten (the server was not touched)")
        for why in refused if which == "all" else []:
            echo(why)
        if which == "all":
            echo(f"cleanup: {len(deleted)} journals forgotten, {len(refused)} kept")
    if refused and which != "all":
        raise BadValueError(f"--forget-journal: {refused[0]}",
                            hint="give the path a note named, or all (every journal of a run that is gone)")
    return 0
