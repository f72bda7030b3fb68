"""What encbench leaves on a MariaDB server given by --dsn, and how it is taken away after a kill.

An external server is never reconfigured: what a run makes there is its own database
(`encbench_<8 hex>`). It is written in a restore journal (local/restore_journal.py) before
CREATE DATABASE and dropped by the run's clean-up, which then deletes the journal; after a
SIGKILL the next run against the same server drops it first, whatever the spelling of the
server's address (127.0.0.1, localhost, a hostname): journals are matched by what the server is.

A restore is compare-and-swap (restore_journal): a journaled database is dropped only while it holds
nothing but what encbench makes there (`OBJECTS`); one that holds anything else (a DBA's table) is
kept, said in one line, and its journal kept until `encbench cleanup --forget-journal`. A CREATE
DATABASE that fails takes its database out of the journal at once (a user without CREATE leaves no
journal); a journaled database that does not exist is dropped from the journal without a word.
"""

from __future__ import annotations

import re

from ..local import restore_journal
from .client import first_line, pymysql

ENGINE = "mariadb"
# the only names a journal may have this module drop: a run's database, and the oltp workload's two beside it
SCHEMA = re.compile(r"encbench_(leak_)?[0-9a-f]{8}(_plain|_enc)?\Z")
# the only objects encbench makes in its databases (tables: at rest, in transit, hash, column, a run's copy,
# sysbench's, leak-check's; the storm procedure): anything else there was made by someone else
OBJECTS = re.compile(r"(plain|enc|rt|bulk|hashsrc|storm|t|col_\d+|run_\d+_[0-9a-f]{6}|sbtest\d+)\Z")


def identity(cur) -> dict:
    """What this server is, read from the server itself (any role may read these): @@server_uid
    (MariaDB's hash of the machine's MAC address and the port; no @@server_uuid in MariaDB),
    @@hostname, @@port and @@datadir. A server that does not know server_uid (older versions)
    or could not compute it (no MAC address) is named by the other three."""
    try:
        cur.execute("SELECT @@server_uid")
        uid = cur.fetchone()[0] or None
    except pymysql().err.MySQLError:  # 1193: unknown system variable
        uid = None
    cur.execute("SELECT @@hostname, @@port, @@datadir")
    hostname, port, datadir = cur.fetchone()
    return {"server_uid": uid, "hostname": hostname, "port": int(port), "datadir": datadir}


def open_journal(conn, params: dict) -> restore_journal.Journal:
    """This run's journal (not saved yet); first, what earlier runs left on this server is dropped."""
    cur = conn.cursor()
    me = identity(cur)
    dead, _, bad = restore_journal.existing(ENGINE, lambda data: data.get("identity") == me)
    for path in bad:
        restore_journal.note(f"{path} is not a restore journal this encbench can read: look at it, then delete it")
    for old in dead:
        restore(conn, old, earlier=True)
    server = {"host": params.get("host") or params.get("unix_socket"), "port": params.get("port"),
              "dbname": params.get("database"), "user": params.get("user")}
    return restore_journal.new(ENGINE, server, me)


def create_database(cur, journal: restore_journal.Journal | None, schema: str, *, main: bool = False) -> None:
    """CREATE DATABASE, journaled before it runs (a SIGKILL right after it is covered: as the run's `schema`
    when `main`, else one more of its `extra_schemas`) and taken out of the journal at once when it fails (a
    user without CREATE leaves nothing to restore)."""
    if journal is not None:
        if main:
            journal.data["schema"] = schema
        else:
            journal.data.setdefault("extra_schemas", []).append(schema)
        journal.save()
    try:
        cur.execute(f"CREATE DATABASE {schema}")
    except BaseException:
        if journal is not None:
            if main:
                journal.data["schema"] = None
            else:
                journal.data["extra_schemas"].remove(schema)
            journal.save()
        raise


def objects_not_made(cur, schema: str) -> list[str]:
    """What `schema` holds that encbench does not make: tables and views, routines, triggers, events."""
    cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                "UNION ALL SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s "
                "UNION ALL SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = %s "
                "UNION ALL SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = %s",
                (schema,) * 4)
    return sorted(str(r[0]) for r in cur.fetchall() if not OBJECTS.match(str(r[0])))


def _schemas(journal: restore_journal.Journal) -> list[str]:
    return [s for s in [journal.data.get("schema"), *journal.data.get("extra_schemas", [])] if s]


def restore(conn, journal: restore_journal.Journal, *, earlier: bool = False) -> bool:
    """Drop the databases a journal names that exist and hold only what encbench makes, then delete the
    journal; what holds more is kept, with its journal; on failure say so and keep it."""
    schemas = _schemas(journal)
    whose = f"an earlier encbench run left on {journal.describe()}" if earlier else "this run made"
    wrong = [s for s in schemas if not SCHEMA.match(str(s))]
    if wrong:
        restore_journal.note(f"{journal.path} names {wrong[0]!r}, not a database encbench makes: not dropped; "
                             f"look at it, then delete the journal")
        return False
    found, kept = [], {}
    try:
        cur = conn.cursor()
        for schema in schemas:
            cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (schema,))
            if cur.fetchone() is None:
                continue  # never made (or dropped since): nothing to undo
            foreign = objects_not_made(cur, schema)
            if foreign:
                kept[schema] = foreign
                continue
            cur.execute(f"DROP DATABASE IF EXISTS `{schema}`")
            found.append(schema)
    except pymysql().err.MySQLError as e:
        where = f"; {journal.path} keeps it: the next `encbench run --dsn` against this server drops it first" \
            if journal.path else ""
        restore_journal.note(f"could not drop the database {whose} ({', '.join(schemas)}): {first_line(e)}{where}")
        return False
    if kept:
        _keep(journal, whose, found, kept)
        return False
    journal.discard()
    if earlier and found:
        restore_journal.note(f"restored what {whose}: database {', '.join(found)} dropped")
    return True


def _keep(journal: restore_journal.Journal, whose: str, dropped: list[str], kept: dict[str, list[str]]) -> None:
    """The journal narrowed to the databases kept (holding what encbench does not make), and one line."""
    journal.data["schema"], journal.data["extra_schemas"], journal.data["kept"] = None, list(kept), True
    journal.save()
    parts = [f"database {s} holds {', '.join(f[:3])}{f' and {len(f) - 3} more' if len(f) > 3 else ''}, which "
             f"encbench does not make: not dropped" for s, f in kept.items()]
    restore_journal.note(f"restored what {whose}{': database ' + ', '.join(dropped) + ' dropped' if dropped else ''}"
                         f", except: " + restore_journal.kept_text(parts, journal.path))
