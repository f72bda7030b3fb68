"""What killed encbench commands left, found through their owner records, undone by the next command and named in
one stderr line ("encbench: reclaimed what a killed run (pid N) left: PostgreSQL server pid M, memory cgroup X,
directories A, B").

Every command that makes things (run, advise, leak-check, tls-scan, selftest: cli/commands's `makes`) calls
`claim()` first (cli/app), and the runner again before it starts its forkserver. Only what a DEAD owner left is taken (util/proc: pid and process start time, so a
live command's servers, or a process that reused a dead owner's pid, are never touched). In order:

1. the commands' owner records (util/owners): each recorded process that is still the one recorded (start time),
   and every process whose command line points into one of the record's directories (a server's children, a server
   a worker restarted, valgrind's processes), stopped: SIGTERM, then SIGKILL;
2. the private server directories holding an owner file of their own (util/leftovers.reclaim_servers);
3. as root, the filesystems of the encfs ledger (unmounted, loop devices detached, keys shredded);
4. the records' directories and files removed (a directory with a mount still below it is kept and said);
5. the scratch-*, pymp-* and filesystems' directories holding an owner file (util/leftovers.reclaim);
6. as root, the memory cgroups of dead owners (host/memcg), once nothing runs in them.

`plan()` is the pure part (which records, which of their items, in which order); `reclaim()` carries it out.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ..util import owners, proc
from ..util import leftovers
from ..util.columns import echo
from ..host.encfs import ledger
from ..host import memcg

TERM_WAIT_S = 20  # a dead run's server: SIGTERM (a clean shutdown; under valgrind its last dumps), then SIGKILL


@dataclass
class Plan:
    """One dead command's record: its processes (newest first), directories (deepest first), files."""
    record: Path
    owner_pid: int
    processes: list[dict]
    dirs: list[str]
    files: list[str]
    # what carrying it out did (encbench cleanup reports each)
    stopped: list[tuple[int, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _absolute(path) -> bool:
    return isinstance(path, str) and path.startswith("/") and os.path.normpath(path) not in ("/", "//")


def _pid_item(item: dict) -> bool:
    return isinstance(item.get("pid"), int) and not isinstance(item.get("pid"), bool) and item["pid"] > 1


def plan(records: list[tuple[Path, dict]], dead=proc.owner_dead) -> list[Plan]:
    """The records whose owner is dead (never this process's, never a live or unreadable owner's), each with what
    to undo, last made first."""
    out = []
    for path, record in records:
        if not dead(record.get("owner")):
            continue
        items = [i for i in reversed(record.get("items") or []) if isinstance(i, dict)]
        paths = lambda kind: sorted({os.path.normpath(i["path"]) for i in items  # noqa: E731
                                     if i.get("kind") == kind and _absolute(i.get("path"))},
                                    key=lambda p: (-p.count("/"), p))
        out.append(Plan(path, record["owner"]["pid"], [i for i in items if i.get("kind") == "process" and _pid_item(i)],
                        paths("dir"), paths("file")))
    return out


@dataclass
class Reclaimed:
    """What one claim() took, per dead owner pid: the phrases of the line; and what it could not take."""
    taken: dict[int, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    rows: dict[str, list] = field(default_factory=dict)  # per source, as `encbench cleanup --json` prints them

    def add(self, pid, phrase: str) -> None:
        self.taken.setdefault(pid if isinstance(pid, int) else -1, []).append(phrase)

    def empty(self) -> bool:
        return not self.taken and not self.problems


# -- 1: processes -------------------------------------------------------------------------------------------


def _describe(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.Error:
        return "?"


def _processes_of(p: Plan, table: list[psutil.Process]) -> list[tuple[psutil.Process, str, bool]]:
    """The plan's processes still running: the recorded ones (same start time), then those running from its
    directories; each with what it is (its record's words, else its name) and whether it was recorded."""
    found: dict[int, tuple[psutil.Process, str, bool]] = {}
    for item in p.processes:
        start, ticks = (v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                        for v in (item.get("start"), item.get("since_boot")))
        handle = proc.process(item["pid"], start, ticks)
        if handle is not None and start is not None and handle.pid != os.getpid():
            found.setdefault(handle.pid, (handle, str(item.get("what") or "process"), True))
    dirs = [Path(d) for d in p.dirs]
    for other in table:
        if other.pid not in found and any(leftovers.points_into(other.info.get("cmdline") or [], d) for d in dirs):
            found[other.pid] = (other, _describe(other), False)
    return list(found.values())


def _phrases_of_processes(named: list[tuple[psutil.Process, str, bool]]) -> list[str]:
    phrases = [f"{what} pid {p.pid}" for p, what, recorded in named if recorded]
    rest = [(p, what) for p, what, recorded in named if not recorded]
    if rest:
        names = sorted({what for _, what in rest})
        phrases.append(f"{len(rest)} {'other ' if phrases else ''}process{'es' if len(rest) > 1 else ''} "
                       f"({', '.join(names)}: pid {', '.join(str(p.pid) for p, _ in rest)})")
    return phrases


def stop_processes(plans: list[Plan], out: Reclaimed, wait: float = TERM_WAIT_S) -> None:
    if not plans:
        return
    table = [p for p in psutil.process_iter(["cmdline"]) if p.pid != os.getpid()]
    per_plan = [(p, _processes_of(p, table)) for p in plans]
    everything = [handle for _, named in per_plan for handle, _, _ in named]
    still = {p.pid for p in proc.stop(everything, wait)}
    for p, named in per_plan:
        p.stopped = [(h.pid, w) for h, w, _ in named if h.pid not in still]
        for phrase in _phrases_of_processes([n for n in named if n[0].pid not in still]):
            out.add(p.owner_pid, phrase)
        if left := [h.pid for h, _, _ in named if h.pid in still]:
            p.problems.append(f"pid {', '.join(map(str, left))} of the run with pid {p.owner_pid} still running")
            out.problems.append(p.problems[-1])


# -- 4: directories and files ---------------------------------------------------------------------------------


def _mounts_below(directory: str) -> list[str]:
    return leftovers.mounts_under(Path(directory))


def _remove_dir(d: str) -> str | None:
    """Remove a recorded directory; a problem, or None (gone, or never made)."""
    if os.path.islink(d):
        os.unlink(d)
        return None
    if not os.path.isdir(d):
        return None
    if mounts := _mounts_below(d):
        return f"{d} kept: {', '.join(mounts)} mounted below it"
    shutil.rmtree(d, ignore_errors=True)
    return f"{d} could not be removed" if os.path.lexists(d) else None


def remove_paths(plans: list[Plan], out: Reclaimed) -> None:
    for p in plans:
        problems, files, dirs = [], [], []
        for f in p.files:
            if os.path.lexists(f) and not os.path.isdir(f):
                try:
                    os.unlink(f)
                    files.append(f)
                except OSError as e:
                    problems.append(f"{f}: {e.strerror}")
        for d in p.dirs:
            existed = os.path.lexists(d)
            if (problem := _remove_dir(d)) is not None:
                problems.append(problem)
            elif existed:
                dirs.append(d)
        if dirs:
            out.add(p.owner_pid, f"director{'y' if len(dirs) == 1 else 'ies'} {', '.join(dirs)}")
        if files:
            out.add(p.owner_pid, f"file{'' if len(files) == 1 else 's'} {', '.join(files)}")
        p.removed, p.problems = dirs + files, p.problems + problems
        out.problems += problems
        if not p.problems:
            p.record.unlink(missing_ok=True)


# -- the whole claim --------------------------------------------------------------------------------------------


def _filesystems(out: Reclaimed) -> None:
    if os.geteuid() != 0 or not ledger.STATE_DIR.is_dir():
        return
    done = ledger.reclaim()
    out.rows["filesystems"] = done
    for record, problems in done:
        pid = (record.get("owner") or {}).get("pid")
        out.add(pid, f"{record.get('kind')} filesystem {record['workdir']}")
        out.problems += problems


def _cgroups(out: Reclaimed) -> None:
    if os.geteuid() != 0 or not memcg.STATE_DIR.is_dir():
        return
    rows = memcg.reclaim()
    out.rows["memory_cgroups"] = rows
    for row in rows:
        if row["removed"]:
            out.add(row["owner_pid"], f"memory cgroup {row['path']}")
        out.problems += row["problems"]


def _legacy_servers(out: Reclaimed, planned: list[Plan]) -> None:
    skip = {d for p in planned for d in p.dirs}  # the owner records' own: removed with the rest of their record
    rows = leftovers.reclaim_servers(term_wait=TERM_WAIT_S, skip=skip)
    out.rows["servers"] = rows
    for row in rows:
        phrase = f"server directory {row['dir']}"
        if row["stopped"]:
            phrase += f" (stopped pid {', '.join(map(str, row['stopped']))})"
        out.add(row["owner_pid"], phrase)
        out.problems += [f"{row['dir']}: {p}" for p in row["problems"]]


def _directories(out: Reclaimed, data_dir: Path | None) -> None:
    directories = leftovers.reclaim(data_dir)
    out.rows["directories"] = directories
    for d, pid in directories:
        out.add(pid, f"directory {d}")


def reclaim(data_dir: Path | None = None) -> Reclaimed:
    """Everything dead commands left (the order in the module's docstring). A step that fails is said in the line
    (never an error of the command that reclaims)."""
    out = Reclaimed()
    plans: list[Plan] = []

    def owned() -> None:
        owners.sweep_temporaries()
        plans.extend(plan(owners.records()))
        out.rows["owners"] = plans
        stop_processes(plans, out)

    steps = (("processes", owned), ("servers", lambda: _legacy_servers(out, plans)), ("filesystems", lambda: _filesystems(out)),
             ("paths", lambda: remove_paths(plans, out)), ("directories", lambda: _directories(out, data_dir)),
             ("memory cgroups", lambda: _cgroups(out)))
    for name, step in steps:
        try:
            step()
        except (OSError, psutil.Error) as e:
            out.problems.append(f"{name}: {type(e).__name__}: {e}")
    return out


def line(r: Reclaimed) -> str | None:
    """The one stderr line naming what was reclaimed (and what could not be), or None when there was nothing."""
    if r.empty():
        return None
    pids = sorted(p for p in r.taken if p > 0)
    who = (f"a killed run (pid {pids[0]})" if len(pids) == 1 else
           f"killed runs (pid {', '.join(map(str, pids))})" if pids else "killed runs")
    parts = [phrase for pid in sorted(r.taken) for phrase in r.taken[pid]]
    text = f"encbench: reclaimed what {who} left: {', '.join(parts)}" if parts else \
        "encbench: what killed runs left could not all be reclaimed"
    if r.problems:
        text += f"; not reclaimed: {'; '.join(dict.fromkeys(r.problems))} (encbench cleanup once nothing uses it)"
    return text


def claim(data_dir: Path | None = None, *, pymp: bool = False) -> Reclaimed:
    """At the start of a command that makes things: reclaim what dead ones left (one stderr line); pymp (the runner,
    before its forkserver starts): mark multiprocessing's directory as this command's (leftovers.claim_pymp)."""
    done = reclaim(data_dir)
    if (text := line(done)) is not None:
        echo(text, file=sys.stderr)
    if pymp:
        leftovers.claim_pymp()
    return done
