"""`encbench cleanup`: remove what killed runs left of the filesystems encbench made (host/encfs), of
the private servers it started (lab/leftovers.reclaim_servers) and of the memory cgroups those servers ran
in (host/memcg: removed once the servers are stopped).

Only what the ledger or an owner record in a server's directory names, and only for runs whose
process is gone (pid + start time): a live run's mounts and servers, any mount encbench did not
create and any directory without an owner record are never touched. A dead run's server still
running is stopped (SIGTERM, then SIGKILL) only when its command line points into its directory.
"""

from __future__ import annotations

import argparse
import json
import os


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print what was removed as JSON")


def cmd_cleanup(args) -> int:
    from ..errors import FilesystemUnavailableError
    from ..host.encfs import ledger

    if os.geteuid() != 0:  # the ledger, the mounts and the loop devices are root's
        raise FilesystemUnavailableError(f"cleanup needs root (running as uid {os.geteuid()})",
                                         hint="run encbench cleanup as root")
    from ..host import memcg
    from ..lab import leftovers

    servers = leftovers.reclaim_servers()
    done = ledger.reclaim()
    groups = memcg.reclaim()  # after the servers and filesystems: a group goes once nothing runs in it
    live = [r["id"] for r in ledger.records() if _is_live(r)]
    rows = [{"id": r["id"], "kind": r.get("kind"), "owner_pid": r["owner"].get("pid"), "workdir": r["workdir"],
             "removed": not problems, "problems": problems} for r, problems in done]
    if args.json:
        print(json.dumps({"reclaimed": rows, "live_kept": live, "servers": servers, "memory_cgroups": groups},
                         indent=1))
    else:
        for row in servers:
            print(_server_line(row))
        for row in rows:
            state = "removed" if row["removed"] else "INCOMPLETE: " + "; ".join(row["problems"])
            print(f"{row['id']} (dead pid {row['owner_pid']}) {row['workdir']}: {state}")
        for row in groups:
            state = "removed" if row["removed"] else "INCOMPLETE: " + "; ".join(row["problems"])
            print(f"memory cgroup {row['path']} (dead pid {row['owner_pid']}): {state}")
        print(f"cleanup: {sum(r['removed'] for r in rows)} removed, "
              f"{sum(not r['removed'] for r in rows)} incomplete, {len(live)} of live runs kept"
              + (f"; servers: {sum(r['removed'] for r in servers)} removed, "
                 f"{sum(not r['removed'] for r in servers)} incomplete" if servers else "")
              + (f"; memory cgroups: {sum(r['removed'] for r in groups)} removed, "
                 f"{sum(not r['removed'] for r in groups)} incomplete" if groups else ""))
    if any(not r["removed"] for r in rows + servers + groups):
        raise FilesystemUnavailableError("some leftovers could not be removed (listed above)",
                                         hint="stop what still uses them and run encbench cleanup again")
    return 0


def _server_line(row: dict) -> str:
    stopped = f"stopped pid {', '.join(map(str, row['stopped']))}, " if row["stopped"] else ""
    state = "removed" if row["removed"] else "INCOMPLETE: " + "; ".join(row["problems"])
    return f"server {row['dir']} (dead pid {row['owner_pid']}): {stopped}{state}"


def _is_live(record: dict) -> bool:
    from ..lab import leftovers

    owner = record.get("owner") or {}
    return isinstance(owner.get("pid"), int) and owner["pid"] != os.getpid() and leftovers.alive(owner)
