"""What each workload family needs from a session, declared as `typing.Protocol`s.

Every method a workload calls on a session is declared here, once, with the call the
workload makes (positional-only parameters where the workloads pass them by position, so
an engine may name them as it likes). What every session has (target, set_cache, variant,
table, row_count, check_operation, ...) is `engines.base.Session`'s.

A workload names the capability it needs (`Workload.needs`); an engine names its session
class (`Engine.session_class`). Whether an engine can serve a workload is derived by
checking the session class structurally against the Protocol (`gaps`): every member
present, every method callable the way the Protocol says. Nothing is listed by hand.

Families:
  at rest:    ScanSession < DmlSession, RebuildSession, BackupSession        (AtRestSession)
  in transit: StormSession, StreamSession, ConnectSession, SelectLoadSession  (InTransitSession)
  in query:   HashSqlSession, ConcurrentSessions                             (InQuerySession)
  in column:  ColumnSession
  oltp:       OltpSession
  sort:       SortSession
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Protocol

from ..errors import UnknownNameError
from ..vocab.probe import Target


# -- shared: the probes' target switched for one operation ---------------------------------

class Retargets(Protocol):
    def use_target(self, target: Target | None, /) -> None:
        """Until called with None, `target()` returns this one (connections the operation opens)."""


# -- at rest: the engine's encrypted table, scanned, changed, rebuilt, backed up ------------

class ScanSession(Protocol):
    def query(self, sql: str, params: tuple = (), /) -> list:
        """Rows of a query on `table` ('?' placeholders)."""


class DmlSession(ScanSession, Protocol):
    def begin(self) -> None: ...

    def execute(self, sql: str, params: tuple = (), /) -> int:
        """Rows affected ('?' placeholders)."""

    def commit(self) -> None: ...


class RebuildSession(Protocol):
    def rebuild_operations(self) -> list[tuple[str, Callable[[], Any]]]:
        """(name, timed callable) per rebuild the engine has (e.g. REINDEX, VACUUM)."""


class BackupSession(Protocol):
    def prepare_backup(self, dest: Path, /) -> Any:
        """Untimed: a handle for run_backup."""

    def run_backup(self, handle: Any, /) -> None:
        """Timed: the backup written to the destination given to prepare_backup."""

    def check_backup(self, dest: Path, /) -> dict:
        """Untimed: the backup is encrypted exactly when its source is (CheckFailedError if not)."""


class AtRestSession(DmlSession, RebuildSession, BackupSession, Protocol):
    """Everything the at-rest workloads need."""


# -- in transit: bytes over the wire, connections made and broken ---------------------------

class StormSession(Protocol):
    def storm(self, messages: int, /, send: bool) -> dict:
        """A server-side loop of `messages` small messages (send=False: the loop, nothing sent), Python client."""

    def native_storm(self, messages: int, send: bool, /) -> Any:
        """The same through a native client: a driver (before, run, after), or None where there is none."""


class StreamSession(Protocol):
    def stream_out(self) -> dict:
        """One large result read to the end: {"bytes_received": ...}."""


class ChurnSession(Retargets, Protocol):
    def churn_target(self, appname: str, /) -> Target:
        """What to measure while connections come and go (they carry `appname`)."""


class ConnectSession(ChurnSession, Protocol):
    def connect_cycles(self, n: int, appname: str, /) -> list[int]:
        """n connections opened, TLS-checked and closed, one after the other: their server-side ids."""

    def settle(self, ids: list[int], /) -> None:
        """Until the server has let go of those connections."""


class SelectLoadSession(ChurnSession, Protocol):
    def select_load(self, *, clients: int, seconds: float, appname: str, scratch: Path,
                    queries: int | None = None) -> dict:
        """`clients` client processes of primary-key SELECTs for `seconds` (or `queries` each, when given: fixed work,
        --meter instructions): queries, qps, latencies."""


class InTransitSession(StormSession, StreamSession, ConnectSession, SelectLoadSession, Protocol):
    """Everything the in-transit workloads need."""


# -- in query: a function called per row, in k sessions started together --------------------

class HashSqlSession(Protocol):
    def hash_sql(self, function: str, with_function: bool, /) -> str:
        """The aggregate over the hash table's rows, with the hash function or without it."""


class ConcurrentSessions(Retargets, Protocol):
    def open_sessions(self, k: int, /, *, parallel: bool) -> list:
        """k more connections (untimed); parallel=False: one session is one CPU."""

    def sessions_target(self, conns: list, /) -> Target:
        """What to measure while those sessions run."""

    def run_sessions(self, conns: list, sql: str, /) -> tuple[list, float]:
        """sql in every session, released together: (results, seconds)."""

    def close_sessions(self, conns: list, /) -> None: ...


class InQuerySession(HashSqlSession, ConcurrentSessions, Protocol):
    """Everything the in-query (hash) workload needs."""


# -- in column: one column encrypted in the client or by the database (workloads/column.py) ---

class ColumnSession(Protocol):
    """A table of its own (id, value) for the column workload. Values are what the client sends: ciphertext
    for a client method, plaintext for `none` and for the engine's own in-database methods (its SQL encrypts
    on the way in and decrypts on the way out, with the key of `column_key`)."""

    def column_key(self) -> bytes:
        """The run's key material (from --key-file / ENCBENCH_KEY, or generated): never stored anywhere."""

    def column_methods(self) -> dict[str, bool]:
        """The engine's in-database methods: name -> searchable (an index serves an equality lookup)."""

    def column_create(self, method: str, indexed: bool, /) -> dict:
        """Untimed: a fresh empty table for this method, with an index on the value when `indexed`."""

    def column_insert(self, rows: list[tuple[int, bytes]], /) -> int:
        """(id, value) rows written in one transaction."""

    def column_read(self) -> list[tuple[int, bytes]]:
        """Every (id, value), in id order (decrypted by the database for an in-database method)."""

    def column_lookup(self, value: bytes, /) -> list[int]:
        """The ids of the rows whose value equals this one (the table's index where there is one)."""

    def column_update(self, rows: list[tuple[bytes, int]], /) -> int:
        """(new value, id) rows changed in one transaction: how many."""

    def column_size(self) -> dict:
        """Untimed: {"value_bytes": the stored values' total length, "db_bytes": the table's (and index's) space}."""

    def column_explain(self, by_value: bool, /) -> dict:
        """Untimed: the plan of the lookup (by_value) or of the full read: {"index_used": 0|1, "plan": text}."""

    def column_sessions(self) -> Any:
        """None, or (a server engine, an in-database method) what decrypts the table in k sessions together:
        column_readers(k) -> conns (untimed), column_read_together(conns) -> (rows each, seconds),
        sessions_target(conns), use_target(target), close_sessions(conns)."""


# -- a real workload: a transaction mix driven for a set time (workloads/oltp.py) -------------------

class OltpSession(Retargets, Protocol):
    """A transaction mix run by the engine's own load generator where it has one (pgbench, sysbench), on data
    that driver prepared, with the engine's memory for data held to the variant's `memory` share."""

    def oltp_scripts(self) -> tuple[str, ...]:
        """The mixes this engine runs (the `script` variant's values), the first the default."""

    def oltp_target(self) -> Target:
        """What to measure while the driver runs: the whole server (its backends and background work), the
        driver as the client, and the engine's page counters (target.extra["counters"]: pages_read = physical
        page reads, pages_written)."""

    def oltp_warm(self, script: str, clients: int, seconds: float, scratch: Path, /) -> dict:
        """Untimed: the same mix run for `seconds` so the engine's memory holds its steady state;
        {"memory": the memory share facts read back from the engine (pool_bytes, data_bytes, share)}."""

    def oltp_run(self, script: str, clients: int, seconds: float, scratch: Path, /) -> dict:
        """Timed: the mix for `seconds`: {"transactions", "tps", "latency_p50_ms", "latency_p95_ms",
        "latency_p99_ms" (from the driver's own per-transaction record), "driver": what ran it}."""


# -- a sort larger than its buffer: the server's temporary files (workloads/sort.py) ----------------

class SortSession(Protocol):
    def sort_all(self, buffer_bytes: int, /) -> dict:
        """Timed: every row of `table` sorted on unindexed columns with a sort buffer of `buffer_bytes` (the
        engine's own sort, spilling to its temporary files); {"rows_sorted": n}."""


FAMILIES: dict[str, type] = {"at rest": AtRestSession, "in transit": InTransitSession, "in query": InQuerySession,
                             "in column": ColumnSession, "oltp": OltpSession, "sort": SortSession}


# -- the derivation ------------------------------------------------------------------------

def _protocols(protocol: type) -> list[type]:
    return [c for c in protocol.__mro__ if getattr(c, "_is_protocol", False) and c is not Protocol]


def members(protocol: type) -> dict[str, inspect.Signature | None]:
    """The Protocol's members (its bases' included): name -> the call it declares (None: a data member)."""
    out: dict[str, inspect.Signature | None] = {}
    for cls in reversed(_protocols(protocol)):
        for name in getattr(cls, "__annotations__", {}):
            out.setdefault(name, None)
        for name, value in vars(cls).items():
            if not name.startswith("_") and callable(value):
                out[name] = inspect.signature(value)
    return out


def _declared(cls: type, name: str) -> bool:
    """A data member: a class attribute, or an annotation somewhere in the class's MRO."""
    return hasattr(cls, name) or any(name in getattr(c, "__annotations__", {}) for c in cls.__mro__)


def _call_signature(cls: type, name: str) -> inspect.Signature | None:
    """How `instance.name(...)` is called: the method's signature without `self`."""
    raw = inspect.getattr_static(cls, name)
    fn = getattr(cls, name)
    if not callable(fn):
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: assume it can be called
        return inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
                                  inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
    if isinstance(raw, (staticmethod, classmethod)) or not inspect.isfunction(raw):
        return sig
    params = list(sig.parameters.values())
    return sig.replace(parameters=params[1:])


def _callable_as(impl: inspect.Signature, declared: inspect.Signature) -> bool:
    """Does the implementation accept every call the declaration allows? Tried: the required arguments
    only, and all of them, each with the positional-or-keyword ones passed by position and by keyword."""
    P = inspect.Parameter
    params = [p for p in declared.parameters.values() if p.name != "self"]
    calls = []
    for with_optional in (False, True):
        for by_keyword in (False, True):
            args, kwargs = [], {}
            for p in params:
                if p.default is not P.empty and not with_optional:
                    continue
                if p.kind is P.POSITIONAL_ONLY or (p.kind is P.POSITIONAL_OR_KEYWORD and not by_keyword):
                    args.append(None)
                elif p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY):
                    kwargs[p.name] = None
            calls.append((args, kwargs))
    try:
        for args, kwargs in calls:
            impl.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def _call_text(name: str, sig: inspect.Signature) -> str:
    params = [p.replace(annotation=p.empty) for p in sig.parameters.values() if p.name != "self"]
    return f"{name}{sig.replace(parameters=params, return_annotation=inspect.Signature.empty)}"


def gaps(session_class: type, needs: type) -> list[str]:
    """What `session_class` lacks to serve `needs` (empty: it serves it), one phrase per member."""
    out = []
    for name, declared in members(needs).items():
        if declared is None:
            if not _declared(session_class, name):
                out.append(f"attribute {name}")
            continue
        if not hasattr(session_class, name):
            out.append(f"{name}()")
            continue
        impl = _call_signature(session_class, name)
        if impl is None:
            out.append(f"{name}() (not callable)")
        elif not _callable_as(impl, declared):
            out.append(f"{name}() callable as {_call_text(name, declared)}")
    return out


def capabilities(session_class: type) -> tuple[str, ...]:
    """The families a session class serves whole (for `encbench list`)."""
    return tuple(f for f, proto in FAMILIES.items() if not gaps(session_class, proto))


def unserved(engine, workload) -> list[str]:
    """What the engine's session lacks to run the workload (empty: nothing)."""
    return gaps(engine.session_class, workload.needs)


def supported(engine, workloads) -> tuple[str, ...]:
    """The engine's workloads (its own order) that its session can serve; `workloads`: the registry (anything with .get(name))."""
    return tuple(n for n in engine.workloads if not unserved(engine, workloads.get(n)))


def require(engine, workload, workloads) -> None:
    """UnknownNameError (one line, what it lacks) unless the engine lists the workload and its session serves it."""
    valid = ", ".join(supported(engine, workloads)) or "none"
    if workload.name not in engine.workloads:
        raise UnknownNameError(f"engine {engine.name} has no workload {workload.name!r}", hint=f"valid: {valid}")
    missing = unserved(engine, workload)
    if missing:
        raise UnknownNameError(f"engine {engine.name} cannot run workload {workload.name!r}: its session "
                               f"({engine.session_class.__name__}) lacks {', '.join(missing)} "
                               f"({workload.needs.__name__})", hint=f"valid: {valid}")
