"""A PostgreSQL server encbench does not own (--dsn), and what a run may change on one.

Its address parsed (a port checked as everywhere else), its facts (version, ssl, TLS library), the ssl settings
this role may read, the journal of what encbench is about to change written before the change (and what earlier
runs left restored first: engines/local/restore_journal), the ssl settings changed with ALTER SYSTEM and put back
after. A private server keeps its journal in memory only (it is deleted anyway).
"""

from __future__ import annotations

from ...errors import BadValueError, EncbenchError, EngineUnavailableError
from ...util import interrupts
from ..local import restore_journal
from . import client, knobs as pg_knobs
from . import state as pg_state
from .client import connect_admin, first_line
from ...util import urls

SSL_SETTINGS = ("ssl_ciphers", "ssl_min_protocol_version", "ssl_max_protocol_version")
note = restore_journal.note  # one line on stderr


def parse_dsn(psycopg, dsn: str, what: str = "--dsn") -> dict:
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as e:
        raise BadValueError(f"{what} is not a valid connection string: {first_line(e)}",
                            hint="use postgresql://user@host:port/db or 'host=... port=... dbname=...'") from None
    for port in str(info.get("port") or "").split(","):  # libpq: one port per host of a multi-host list
        if port.strip():
            _check_port(port.strip(), what)
    for k in ("sslmode", "application_name"):
        info.pop(k, None)  # encbench sets these per variant
    return info


def _check_port(text: str, what: str) -> None:
    """libpq refuses port 0 itself ("invalid port number", as if the server were unreachable): the same one line,
    exit 4, as a MariaDB DSN's or a tls-scan target's port."""
    if not text.isdigit():
        raise BadValueError(f"{what} has a port that is not a number: {text!r}",
                            hint="use postgresql://user@host:port/db or 'host=... port=... dbname=...'")
    urls.check_port(int(text), what=what)


def server_facts(conn) -> dict:
    return {
        "version": conn.execute("SHOW server_version").fetchone()[0],
        "ssl": conn.execute("SHOW ssl").fetchone()[0],
        "ssl_library": _readable(pg_state.read_setting(conn, "ssl_library")),
        "host": conn.info.host,
        "port": conn.info.port,
    }


def _readable(value):
    return value if isinstance(value, str) else None


def privilege_notes(admin, setup: dict) -> list[str]:
    """The ssl settings as found, each one this role may read; what it may not is a note with its GRANT."""
    denied: dict[str, list[str]] = {}  # grant -> settings it would let this role read
    found: dict[str, str | None] = {}
    for k in SSL_SETTINGS:
        value = pg_state.read_setting(admin, k)
        if isinstance(value, pg_state.Denied):
            denied.setdefault(value.grant, []).append(k)
            value = None
        found[k] = value
    setup["original_ssl_settings"] = found
    return [f"the server's {', '.join(names)} not taken (recorded as null: reading them needs "
            f"superuser or pg_read_all_settings; enable with: {grant})" for grant, names in denied.items()]


def open_journal(psycopg, admin, conninfo: dict, *, managed: bool, reconfigure: bool) -> restore_journal.Journal:
    """This run's journal; first, what earlier runs against this server left behind is restored, whatever
    the spelling of the server's address then and now (journals are matched by what the server is)."""
    ident = {"host": admin.info.host, "port": admin.info.port, "dbname": admin.info.dbname, "user": admin.info.user,
             "address": admin.info.hostaddr or None}
    if managed:
        return restore_journal.new("postgres", ident, {}, persist=False)
    identity = pg_state.identity(admin)
    datadir = pg_state.read_setting(admin, "data_directory")
    datadir = datadir if isinstance(datadir, str) else None
    in_recovery = bool(admin.execute("SELECT pg_is_in_recovery()").fetchone()[0])
    belongs = journal_matcher(admin, identity, datadir, in_recovery)
    dead, live, bad = restore_journal.existing("postgres", belongs)
    for path in bad:
        note(f"{path} is not a restore journal this encbench can read: look at it, then delete it")
    unrestored = []
    for old in dead:
        if restore(psycopg, conninfo, old, earlier=True):
            continue
        if old.data.get("changed") and (old.data.get("settings") or not old.data.get("kept")):
            unrestored.append(old)  # settings not restored (failed, or kept: changed since encbench set them)
    if reconfigure:
        busy = [j for j in live if j.data.get("settings")]
        if busy or unrestored:
            j = (busy or unrestored)[0]
            why = (f"another encbench run ({j.describe()}) is reconfiguring this server" if busy else
                   f"an earlier run's changes ({j.describe()}) are not restored yet (journal {j.path})")
            raise EngineUnavailableError(f"--allow-reconfigure refused: {why}",
                                         hint=(f"decide about what it kept, then: encbench cleanup --forget-journal "
                                               f"{j.path}; or drop --allow-reconfigure" if j.data.get("kept") else
                                               "wait for it to finish, or run again with --dsn as a role that can "
                                               "restore it (a superuser); or drop --allow-reconfigure"))
    journal = restore_journal.new("postgres", ident, identity)
    journal.data["data_directory"] = datadir
    journal.data["in_recovery"] = in_recovery
    return journal


def journal_matcher(admin, identity: dict, datadir: str | None, in_recovery: bool):
    """Whether a journal is this server's. By system identifier and port when both sides know them
    (127.0.0.1, localhost or a hostname alike; two clusters never share one, a standby excepted:
    see below); else (a format 1 journal, or a role pg_control_system() was revoked from) by the
    address it names reaching the address this connection reached, on the same port. Never when
    both know their data directory and they differ, nor a primary's journal on a standby (a
    physical standby shares its primary's system identifier; no run can change one)."""
    host, hostaddr, port = admin.info.host, admin.info.hostaddr, admin.info.port
    reached: list[set[str]] = []  # resolved once, when a journal needs it

    def belongs(data: dict) -> bool:
        theirs = data.get("identity") or {}
        if "system_identifier" in theirs and "system_identifier" in identity:
            same = theirs == identity
        else:
            if not reached:
                reached.append(restore_journal.addresses(host, port) | ({hostaddr} if hostaddr else set()))
            same = restore_journal.reaches(data["server"], reached[0], port)
        if not same:
            return False
        if data.get("data_directory") and datadir and data["data_directory"] != datadir:
            return False  # another server that once listened there: not this one's to restore
        return not in_recovery or bool(data.get("in_recovery"))

    return belongs


def restore(psycopg, conninfo: dict, journal: restore_journal.Journal, *, earlier: bool = False) -> bool:
    """Undo a journal's changes, verified, then delete it; on failure say so and keep it for the next run.
    Through this run's address and role, in the database the journal's schema and extension were made in."""
    where = dict(conninfo, dbname=journal.data.get("server", {}).get("dbname") or conninfo.get("dbname"))
    where = {k: v for k, v in where.items() if v is not None}

    def connect():
        return connect_admin(psycopg, where)

    whose = f"an earlier encbench run left on {journal.describe()}" if earlier else "this run changed"
    try:
        done, kept = pg_state.restore(connect, journal.data)
    except (psycopg.Error, EncbenchError) as e:
        msg = e.one_line() if isinstance(e, EncbenchError) else first_line(e)
        where = f"; {journal.path} keeps what must be restored: the next `encbench run --dsn` against " \
                f"this server restores it first" if journal.path else ""
        note(f"could not restore what {whose}: {msg}{where}")
        return False
    if kept:  # changed since encbench set it: the journal keeps only that, until the DBA drops it
        journal.data["kept"] = True
        journal.save()
        note(f"restored what {whose}{': ' + ', '.join(done) if done else ''}, except: "
              + restore_journal.kept_text(kept, journal.path))
        return False
    journal.discard()
    if earlier:
        note(f"restored what {whose}: {', '.join(done) or 'nothing was left changed'}")
    return True


def may_reconfigure(admin, setup: dict, names: tuple[str, ...], not_taken: list[str]) -> bool:
    """--allow-reconfigure on --dsn: whether this role may change these settings and put them back (what it may
    not is a line in not_taken, and the client alone then forces the suite); a curve it may not change fails
    the run (the curve is the server's alone: no client fallback)."""
    blockers = pg_state.reconfigure_blockers(admin, names)
    if blockers and setup.get("ecdh_setting"):
        mine = [b for b in blockers if setup["ecdh_setting"] in b.what] or blockers
        raise EngineUnavailableError(f"--variant ecdh_curve: this role may not change the server's "
                                     f"{setup['ecdh_setting']} and put it back: " + "; ".join(b.text() for b in mine),
                                     hint="run as a role with that privilege, or drop --variant ecdh_curve")
    for b in blockers:
        not_taken.append(f"--allow-reconfigure not used (the client still offers only the variant's suite): "
                         f"{b.text()}")
    return not blockers


def running_values(setup: dict, target: dict) -> dict:
    found = setup["_journal"].data["settings"]
    return {k: found[k]["effective"] if target[k] is None else str(target[k]) for k in setup["_applied"]}


def settings_changed(admin, setup: dict, variants: list) -> tuple[str, ...]:
    """The server settings this run may change: the ssl ones, and the key exchange group's when a variant names
    ecdh_curve (setup["ecdh_setting"]; each curve checked against the server's version first: one line when the
    version cannot take it)."""
    curves = sorted({v["ecdh_curve"] for v in variants if "ecdh_curve" in v})
    if not curves:
        return SSL_SETTINGS
    version_num, version = admin.info.server_version, setup["server"]["version"]
    for curve in curves:
        why = pg_knobs.curve_unavailable(curve, version_num, version)
        if why:
            raise EngineUnavailableError(f"--variant ecdh_curve={curve}: {why}",
                                         hint=f"use ecdh_curve={','.join(c for c in pg_knobs.CURVES if c != curve)}")
    setup["ecdh_setting"] = pg_knobs.curve_setting(version_num)
    found = pg_state.read_setting(admin, setup["ecdh_setting"])
    setup["original_ecdh_setting"] = found if isinstance(found, str) else None
    return SSL_SETTINGS + (setup["ecdh_setting"],)


def change_ssl_settings(setup: dict, target: dict) -> None:
    """ALTER SYSTEM + pg_reload_conf, then wait until a new connection sees the values.

    Signals are deferred throughout: the change is whole or not begun. The journal says
    what to restore before the first statement; a setting going back to as found is RESET
    when it was not in postgresql.auto.conf, set to its old value when it was.
    """
    psycopg = client.psycopg()
    journal = setup["_journal"]
    found = journal.data["settings"]
    changes: dict[str, str | None] = {}
    for k in setup["_applied"]:
        if target[k] != setup["_applied"][k]:
            as_found = found[k]["value"] if found[k]["in_auto_conf"] else None
            changes[k] = as_found if target[k] is None else str(target[k])

    def applied(name: str) -> None:
        setup["_applied"][name] = target[name]

    with interrupts.deferred():
        journal.data["changed"] = True
        pg_state.journal_setting(found, setup["_applied"], changes)  # a restore undoes only what is still these
        journal.save()
        admin = connect_admin(psycopg, setup["_conninfo"])
        try:
            pg_state.alter_system(admin, changes, on_each=applied)
            pg_state.wait_running(lambda: connect_admin(psycopg, setup["_conninfo"]), running_values(setup, target))
            pg_state.journal_setting(found, None, changes)
            journal.save()
        except psycopg.OperationalError as e:
            raise EngineUnavailableError(f"the server went away while its ssl settings were changed: {first_line(e)}",
                                         hint="check that it is running; the next run against it restores them") from None
        except psycopg.Error as e:
            raise BadValueError(f"the server rejected the ssl settings {changes}: {first_line(e)}",
                                hint="use a cipher suite and protocol the server's OpenSSL knows") from None
        finally:
            admin.close()
    interrupts.raise_if_stopped()
