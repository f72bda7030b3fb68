"""What encbench leaves on a MariaDB server given by --dsn, and how it is taken away after a kill.

An external server is never reconfigured: what a run makes there is its own database
(`encbench_<8 hex>`). It is written in a restore journal (local/restore_journal.py) before
CREATE DATABASE and dropped by the run's clean-up, which then deletes the journal; after a
SIGKILL the next run against the same server drops it first, whatever the spelling of the
server's address (127.0.0.1, localhost, a hostname): journals are matched by what the server is.
"""

from __future__ import annotations

import re

from ..local import restore_journal
from .client import first_line, pymysql

ENGINE = "mariadb"
# the only names a journal may have this module drop: a run's database, and the oltp workload's two beside it
SCHEMA = re.compile(r"encbench_(leak_)?[0-9a-f]{8}(_plain|_enc)?\Z")


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


def add_schema(journal: restore_journal.Journal | None, schema: str) -> None:
    """Journal one more database of this run's (the oltp workload's) before it is created."""
    if journal is not None:
        journal.data.setdefault("extra_schemas", []).append(schema)
        journal.save()


def restore(conn, journal: restore_journal.Journal, *, earlier: bool = False) -> bool:
    """Drop the databases a journal names, then delete the journal; on failure say so and keep it."""
    schemas = [s for s in [journal.data.get("schema"), *journal.data.get("extra_schemas", [])] if s]
    whose = f"an earlier encbench run left on {journal.describe()}" if earlier else "this run made"
    wrong = [s for s in schemas if not SCHEMA.match(str(s))]
    if wrong:
        restore_journal.note(f"{journal.path} names {wrong[0]!r}, not a database encbench makes: not dropped; "
                             f"look at it, then delete the journal")
        return False
    found = []
    try:
        cur = conn.cursor()
        for schema in schemas:
            cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (schema,))
            if cur.fetchone() is not None:
                found.append(schema)
            cur.execute(f"DROP DATABASE IF EXISTS `{schema}`")
    except pymysql().err.MySQLError as e:
        where = f"; {journal.path} keeps it: the next `encbench run --dsn` against this server drops it first" \
            if journal.path else ""
        restore_journal.note(f"could not drop the database {whose} ({', '.join(schemas)}): {first_line(e)}{where}")
        return False
    journal.discard()
    if earlier:
        restore_journal.note(f"restored what {whose}: " + (f"database {', '.join(found)} dropped" if found
                                                            else "nothing was left changed"))
    return True
