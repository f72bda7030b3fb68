"""What encbench changes on a PostgreSQL server, and how it is put back exactly as found.

The state worth restoring is what `ALTER SYSTEM` writes into postgresql.auto.conf: a
setting that was not there before is `ALTER SYSTEM RESET` (its line removed), one that was
gets its old value back (ALTER SYSTEM keeps a line in place when it changes its value),
then `pg_reload_conf()`. The restore is verified (pg_file_settings and the running values)
before its journal (restore_journal.py) is deleted. Also journaled: the run's schema and an
extension it created. Compare-and-swap: a setting is put back only while postgresql.auto.conf still
holds a value encbench set (`set`, written before each change), the schema dropped only while it holds
nothing but encbench's objects (`OBJECTS`), the extension never with CASCADE; what changed since is
kept, and its journal with it.

Nothing here needs more than the privileges it is given: what cannot be read comes back as
None with the GRANT that would allow it (`Denied`).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Callable

from ...errors import EngineUnavailableError
from ..local import restore_journal
from .client import first_line

TEST_HOOK = "ENCBENCH_TEST_HOOK_RECONFIGURE"  # tests only: "pause:FILE" (see _test_hook)
RELOAD_WAIT_S = 10


@dataclass
class Denied:
    what: str  # "ssl_ciphers", "CHECKPOINT", ...
    reason: str  # the server's message
    grant: str  # the statement that would allow it

    def text(self) -> str:
        return f"{self.what}: {self.reason} (enable with: {self.grant})"


def quote_ident(name: str) -> str:
    return name if name.isidentifier() and name.islower() else '"' + name.replace('"', '""') + '"'


def current_user(conn) -> str:
    return conn.execute("SELECT current_user").fetchone()[0]


def is_denied(e: Exception) -> bool:
    import psycopg

    return isinstance(e, psycopg.errors.InsufficientPrivilege)


def read_setting(conn, name: str) -> str | Denied:
    """SHOW name, or Denied (settings such as ssl_ciphers need pg_read_all_settings)."""
    from psycopg import sql

    try:
        return conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()[0]
    except Exception as e:  # psycopg.Error
        if not is_denied(e):
            raise
        return Denied(name, first_line(e), f"GRANT pg_read_all_settings TO {quote_ident(current_user(conn))}")


def auto_conf_entries(conn, names) -> dict[str, str] | Denied:
    """The lines of postgresql.auto.conf for these names, as the file holds them now."""
    try:
        rows = conn.execute("SELECT name, setting FROM pg_file_settings "
                            "WHERE sourcefile LIKE '%%postgresql.auto.conf' AND name = ANY(%s) ORDER BY seqno",
                            (list(names),)).fetchall()
    except Exception as e:
        if not is_denied(e):
            raise
        return Denied("pg_file_settings", first_line(e), "a superuser role (pg_file_settings is superuser-only)")
    return dict(rows)


def identity(conn) -> dict:
    """What this server is, whatever the spelling of its address: the cluster's system identifier
    (pg_control_system(), executable by PUBLIC) and the port it listens on. A role a DBA revoked
    pg_control_system() from gets {"port"} alone, and journals are then matched by the address
    reached (restore_journal.reaches)."""
    port = int(conn.execute("SELECT current_setting('port')").fetchone()[0])
    try:
        sysid = conn.execute("SELECT system_identifier FROM pg_control_system()").fetchone()[0]
    except Exception as e:  # psycopg.Error
        if not is_denied(e):
            raise
        return {"port": port}
    return {"system_identifier": str(sysid), "port": port}


def reconfigure_blockers(conn, names) -> list[Denied]:
    """Why this role cannot change the settings and put them back (empty: it can)."""
    user = quote_ident(current_user(conn))
    out: list[Denied] = []
    if conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
        return out
    for name in names:
        ok = conn.execute("SELECT has_parameter_privilege(%s, 'ALTER SYSTEM')", (name,)).fetchone()[0]
        if not ok:
            out.append(Denied(f"ALTER SYSTEM {name}", "not permitted", f"GRANT ALTER SYSTEM ON PARAMETER {name} TO {user}"))
    if not conn.execute("SELECT has_function_privilege('pg_reload_conf()', 'EXECUTE')").fetchone()[0]:
        out.append(Denied("pg_reload_conf()", "not permitted", f"GRANT EXECUTE ON FUNCTION pg_reload_conf() TO {user}"))
    out += [x for x in [auto_conf_entries(conn, names)] if isinstance(x, Denied)]
    return out


def create_blocker(conn, extension: str | None = None) -> Denied | None:
    """Why this role may not CREATE SCHEMA (extension None) or CREATE EXTENSION `extension` in this database; None
    when it may. A superuser may; otherwise a schema needs CREATE on the database, and so does a trusted extension
    (PostgreSQL 13 on: pgcrypto is one); an extension not trusted here needs a superuser."""
    superuser, may_create, db = conn.execute(
        "SELECT rolsuper, has_database_privilege(current_database(), 'CREATE'), current_database() "
        "FROM pg_roles WHERE rolname = current_user").fetchone()
    if superuser:
        return None
    user = quote_ident(current_user(conn))
    what = f"CREATE EXTENSION {extension}" if extension else "CREATE SCHEMA"
    trusted = _trusted(conn, extension) if extension else None
    if extension and trusted is None:
        return None  # not on this server at all: CREATE EXTENSION says so (the contrib package is missing)
    if extension and not trusted:
        return Denied(what, f"{extension} is not a trusted extension on this server: only a superuser may create it",
                      f"a superuser running CREATE EXTENSION {extension}; in database {quote_ident(db)}")
    if may_create:
        return None
    return Denied(what, f"role {user} is not a superuser and has no CREATE privilege on database {quote_ident(db)}",
                  f"GRANT CREATE ON DATABASE {quote_ident(db)} TO {user}")


def _trusted(conn, extension: str) -> bool | None:
    """Is the extension marked trusted (creatable with CREATE on the database)? False before PostgreSQL 13; None
    when the server does not have it."""
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (extension,)).fetchone():
        return None
    if conn.info.server_version < 130000:
        return False
    row = conn.execute("SELECT bool_or(trusted) FROM pg_available_extension_versions WHERE name = %s",
                       (extension,)).fetchone()
    return bool(row and row[0])


def check_may_create_pgcrypto(conn, alternative: str) -> None:
    """--allow-reconfigure lets encbench create pgcrypto; the role must also be allowed to: else say what it lacks."""
    blocker = create_blocker(conn, "pgcrypto")
    if blocker:
        raise EngineUnavailableError(f"cannot create the pgcrypto extension (--allow-reconfigure allows encbench to, "
                                     f"the role must be allowed too): {blocker.reason}",
                                     hint=f"enable with: {blocker.grant}; or {alternative}")


def snapshot(conn, names) -> dict[str, dict]:
    """Per setting: in postgresql.auto.conf or not, its value there, its running value, and the values encbench
    set there ("set": none yet; None in it: no line, RESET)."""
    entries = auto_conf_entries(conn, names)
    if isinstance(entries, Denied):
        raise EngineUnavailableError(f"cannot read postgresql.auto.conf: {entries.text()}")
    out = {}
    for name in names:
        effective = read_setting(conn, name)
        if isinstance(effective, Denied):
            raise EngineUnavailableError(f"cannot read {name}: {effective.text()}")
        out[name] = {"in_auto_conf": name in entries, "value": entries.get(name), "effective": effective, "set": []}
    return out


def journal_setting(found: dict[str, dict], applied: dict | None, changes: dict[str, str | None]) -> None:
    """What a restore may undo, written down (in snapshot()'s entries) before each change: the line each setting
    has now and the one it is about to get (`applied`: the values set so far, None: as found); once the change
    is done (`applied` None), the new line alone."""
    for name, value in changes.items():
        if applied is None:
            found[name]["set"] = [value]
            continue
        now = auto_conf_state(found[name]) if applied[name] is None else str(applied[name])
        found[name]["set"] = list(dict.fromkeys([now, value]))


def _test_hook() -> None:
    """Tests deliver a signal inside the reconfiguration window: inert unless the variable is set."""
    spec = os.environ.get(TEST_HOOK, "")
    if spec.startswith("pause:"):
        with open(spec[len("pause:"):], "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(1.5)


def alter_system(conn, changes: dict[str, str | None], on_each: Callable[[str], None] = lambda name: None) -> None:
    """ALTER SYSTEM SET name = value (None: RESET) for each, then pg_reload_conf()."""
    from psycopg import sql

    for i, (name, value) in enumerate(changes.items()):
        if value is None:
            conn.execute(sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(name)))
        else:
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(str(value))))
        on_each(name)
        if i == 0:
            _test_hook()
    conn.execute("SELECT pg_reload_conf()")


def wait_running(connect: Callable, wanted: dict[str, str]) -> None:
    """The reload is asynchronous: until a new connection sees the values (at most RELOAD_WAIT_S)."""
    deadline = time.monotonic() + RELOAD_WAIT_S
    now: dict = {}
    while True:
        probe = connect()
        try:
            now = {k: read_setting(probe, k) for k in wanted}
        finally:
            probe.close()
        if now == wanted:
            return
        if time.monotonic() > deadline:
            raise EngineUnavailableError(f"the server did not take the settings {wanted} (it runs with {now})",
                                         hint="check the server log: a value may be unknown to it")
        time.sleep(0.05)


def restore(connect: Callable, data: dict) -> tuple[list[str], list[str]]:
    """Undo what a journal says was (or was about to be) changed, compare-and-swap; verified. Returns what was
    done, and what was kept because the server no longer holds what encbench set (one phrase each).
    `data["settings"]` and `data["schema"]` are narrowed to what was kept (the journal then keeps only that)."""
    done: list[str] = []
    kept: list[str] = []
    conn = connect()
    try:
        settings = data.get("settings") or {}
        left: set[str] = set()  # the settings kept
        if settings and data.get("changed"):
            done += _restore_settings(conn, connect, settings, kept, left)
        data["settings"] = {n: w for n, w in settings.items() if n in left}
        schema = data.pop("schema", None)
        if schema:
            from psycopg import sql

            if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
                foreign = objects_not_made(conn, schema)
                if foreign:
                    kept.append(f"schema {schema} holds {foreign}, which encbench does not make: not dropped")
                    data["schema"] = schema
                else:
                    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
                    done.append(f"schema {schema} dropped")
        ext = data.pop("drop_extension", None)
        if ext and conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (ext,)).fetchone():
            import psycopg
            from psycopg import sql

            try:  # never CASCADE: what others made with it since keeps it
                conn.execute(sql.SQL("DROP EXTENSION IF EXISTS {}").format(sql.Identifier(ext)))
                done.append(f"extension {ext} dropped")
            except psycopg.errors.DependentObjectsStillExist as e:
                kept.append(f"extension {ext} is used by objects encbench does not make ({first_line(e)}): "
                            "not dropped")
                data["drop_extension"] = ext
    finally:
        conn.close()
    return done, kept


# the only objects encbench makes in its schema on a --dsn server (tables, and pgbench -i's); anything else found
# there was made by someone else: the schema is then kept, not dropped with it (CASCADE)
OBJECTS = re.compile(r"(rt|bulk|hashsrc|leak|data|col_\d+|run_\d+_[0-9a-f]{6}"
                     r"|pgbench_(accounts|branches|tellers|history))\Z")


def objects_not_made(conn, schema: str) -> str:
    """The relations and functions in `schema` encbench does not make (comma-separated, at most 3 named; ""
    when none): indexes, sequences and TOAST tables come with the tables."""
    rows = conn.execute("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
                        "UNION ALL SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                        "WHERE n.nspname = %s ORDER BY 1", (schema, schema)).fetchall()
    foreign = [r[0] for r in rows if not OBJECTS.match(r[0])]
    return ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")


def auto_conf_state(entry: dict) -> str | None:
    """A journaled setting as found: its line's value in postgresql.auto.conf, None when it had none."""
    return entry["value"] if entry["in_auto_conf"] else None


def _restore_settings(conn, connect: Callable, settings: dict, kept: list, left: set) -> list[str]:
    """The journaled settings back to their lines as found, each only while postgresql.auto.conf still holds
    a value encbench set (an older encbench's journal does not say what it set: a setting no longer as found is
    kept); reloaded and verified for the rest."""
    current = auto_conf_entries(conn, settings)
    if isinstance(current, Denied):
        raise EngineUnavailableError(f"cannot read postgresql.auto.conf to restore it: {current.text()}")
    changes: dict[str, str | None] = {}
    for name, was in settings.items():
        verdict = restore_journal.compare_and_swap(current.get(name), auto_conf_state(was), was.get("set"))
        if verdict == restore_journal.RESTORE:
            changes[name] = auto_conf_state(was)
        elif verdict != restore_journal.AS_FOUND:
            kept.append(restore_journal.kept_value(name, was.get("set"), current.get(name),
                                                   found=auto_conf_state(was)))
            left.add(name)
    ours = {n: w for n, w in settings.items() if n not in left}
    alter_system(conn, changes)  # reloads even with no change: an unapplied one may be pending
    wait_running(connect, {n: w["effective"] for n, w in ours.items()})
    after = auto_conf_entries(conn, ours)
    want = {n: w["value"] for n, w in ours.items() if w["in_auto_conf"]}
    if after != want:
        raise EngineUnavailableError(f"postgresql.auto.conf holds {after} after the restore, not {want}")
    return [f"{n} {'reset' if v is None else 'restored'}" for n, v in changes.items()] or ["settings reloaded"]
