"""MariaDB: encryption at rest (InnoDB + file_key_management) and in transit (TLS).

Managed mode (default) starts a private server (server.py) with the key management
plugin, TLS and O_DIRECT; external mode measures a server given by --dsn mysql://... in
a schema of its own (dropped afterwards) and changes nothing else on it.

One instance holds both copies of the data: a table created ENCRYPTED=NO and one created
ENCRYPTED=YES, each checked in INNODB_TABLESPACES_ENCRYPTION before a run counts. cache=cold
restarts the private server before each operation (no buffer-pool load, O_DIRECT: every
page comes from storage); cache=warm reads the table once first. Each operation's InnoDB
counters prove the state (session.MariaSession.check_operation).

encryption=fscrypt|gocryptfs (filesystems.py): a private server per value whose data directory is on
an encrypted filesystem of that kind, the table ENCRYPTED=NO; with any of them in the run, the
instance holding `off` (and `on`) moves onto a plain loop-mounted ext4 filesystem; every server runs with
InnoDB's instance-level encryption off, as a stock server does (server.FS_BENCH), so `off` is the one baseline.

Every private server is a stock server of the installed version but for what the measurement needs
(server.BENCH, server.NOT_STOCK: docs/mariadb.md): the redo log, temporary files and Aria stay in plaintext and
the cipher is the plugin's default (AES_CBC) unless the run names a knob (knobs.py) or a --setting.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, unquote

from ...vocab import datagen
from ...vocab import sweep
from ...errors import BadValueError, EngineUnavailableError, FilesystemUnavailableError, UsageError
from ...host import rawcipher, rawhash
from ...probes.waits import DEFAULT_INTERVAL_S
from ...util import urls
from ...util.files import check_free_space
from ...util.redact import redact
from ...util.units import fmt_bytes
from ...vocab.live import COMMITS_AS_LOG
from ...vocab.tls import DEFAULT_TLS, check_tls
from ...vocab.variants import Variant, VariantKey, int_validator
from ...vocab import oltp as oltp_workload
from . import column as maria_column
from . import facts as maria_facts
from . import oltp as maria_oltp
from . import sysbench
from . import tables as maria_tables
from .. import column_base
from . import filesystems
from . import meter as maria_meter
from . import knobs as maria_knobs
from . import live as maria_live
from . import server as maria_server
from . import state as maria_state
from .. import wire
from ..local import restore_journal
from ..base import Engine, PrepareContext, Session, Table
from ..concurrent import check_sessions_fit
from .client import connect_bounded, first_line, pymysql, unreachable, where_of
from .session import HASH_FUNCTIONS, MariaSession, check_table

AT_REST = ("scan-like", "scan-eq", "dml", "rebuild", "backup")
IN_TRANSIT = ("storm", "roundtrip", "bulk", "connect")
OLTP = ("oltp",)  # sysbench on an encrypted and a plain schema (oltp.py): encryption by default, tls when named
SORT = maria_knobs.SORT  # a sort spilling to temporary files (encrypt_tmp_files), on the at-rest table
INNODB_ROW_BYTES = 420  # stored bytes per generated row in InnoDB (pages, index), to size the buffer pool

VARIANT_KEYS = (
    VariantKey("encryption", "encryption at rest: off/on, a table created ENCRYPTED=NO or ENCRYPTED=YES "
               "(InnoDB, file_key_management, its default AES_CBC unless named: encryption_algorithm); fscrypt/gocryptfs, the server's "
               "data directory on an encrypted filesystem (InnoDB encryption off; `off` then runs on a plain "
               "loop-mounted ext4 filesystem, needs root); the oltp workload: off/on", ("off", "on"),
               ("off", "on", *filesystems.KINDS), workloads=AT_REST + OLTP + SORT),
    VariantKey("cache", "cold: the private server restarted before each operation (empty buffer pool, O_DIRECT "
               "reads); warm: the table read once before", ("cold", "warm"), ("cold", "warm"),
               workloads=("scan-like", "scan-eq", "dml", "rebuild") + SORT),
    VariantKey("tls", "TLS on the connection: off, on (as negotiated) or PROTOCOL:SUITE (the only suite the "
               "client offers); oltp: only when named", DEFAULT_TLS, validate=check_tls, workloads=IN_TRANSIT + OLTP,
               named_only=OLTP),
    VariantKey("clients", "concurrent client connections (oltp: sysbench threads, 1 unless named)", ("1", "2"),
               validate=int_validator("clients", lambda n: 1 <= n <= 256, "use 1 to 256"),
               workloads=("roundtrip",) + OLTP, named_only=OLTP),
    oltp_workload.script_key(sysbench.SCRIPTS),
    oltp_workload.memory_key(),
    sweep.function_key(HASH_FUNCTIONS, "sha2-256"),
    sweep.sessions_key(),
    maria_column.method_key(),
    *maria_knobs.variant_keys(),  # issue 24: startup settings, a server per value, only when named
)


def _no_memory_on_dsn(value: str) -> str:
    raise UsageError(f"variant memory={value}: encbench does not change a --dsn server's memory",
                     hint="drop --variant memory: the oltp run records the share of the data the server's pool holds")


DSN_MEMORY = VariantKey("memory", "with --dsn: none (the run records the share the server's own pool holds)", (),
                        validate=_no_memory_on_dsn, workloads=OLTP)

def parse_dsn(dsn: str, what: str = "--dsn") -> dict:
    """mysql://user:password@host:port/db -> PyMySQL arguments (~/.my.cnf [client] fills the gaps)."""
    u = urls.split(dsn, what=what)
    if u.scheme not in ("mysql", "mariadb") or not (u.hostname or parse_qs(u.query).get("unix_socket")):
        raise BadValueError(f"{what} {redact(dsn)!r} is not a mysql:// URL",
                            hint="use mysql://user:password@host:port/db")
    out: dict = {"host": u.hostname or "localhost", "port": 3306 if u.port is None else u.port}
    if u.username:
        out["user"] = unquote(u.username)
    if u.password is not None:
        out["password"] = unquote(u.password)
    sock = parse_qs(u.query).get("unix_socket")
    if sock:
        out["unix_socket"] = sock[0]
    my_cnf = Path.home() / ".my.cnf"
    if my_cnf.exists():
        out["read_default_file"] = str(my_cnf)
    if "password" not in out and os.environ.get("MYSQL_PWD") and not _cnf_password(my_cnf):
        out["password"] = os.environ["MYSQL_PWD"]  # as the mysql client: the DSN, then ~/.my.cnf, then MYSQL_PWD
    return out


def _cnf_password(path: Path) -> bool:
    import configparser

    cfg = configparser.RawConfigParser(strict=False, allow_no_value=True)
    try:
        cfg.read(path)
    except (configparser.Error, OSError, UnicodeDecodeError):
        return False
    return cfg.has_option("client", "password")


class MariaDBEngine(Engine):
    name = "mariadb"
    description = ("MariaDB: InnoDB encryption at rest (encrypted vs plain table, cold vs warm buffer pool) and TLS "
                   "in transit (private server on loopback, or --dsn mysql://...)")
    variant_keys = VARIANT_KEYS
    workloads = AT_REST + IN_TRANSIT + ("hash", "column") + OLTP + SORT
    default_workloads = AT_REST + IN_TRANSIT
    # --quick: TDE: a cold scan, every page read from disk decrypted
    quick_workloads, quick_variants = ("scan-like",), ("cache=cold",)
    session_class = MariaSession
    profile_categories = (("mariadb", r"mariadbd|mysqld", r""),)
    options = ("dsn", "keep", "allow_reconfigure", "wait_interval", "settings")
    label = "MariaDB"
    heldout_setups = {"at rest": "encrypted tables"}
    open_includes = "TCP connect, TLS handshake when on, and login included; InnoDB derives no key per connection"
    open_at_rest = False  # InnoDB derives no key per connection: the at-rest summary has no open line
    metric_words = {"cpu_s": "server CPU", "client_cpu_s": "client CPU"}
    at_rest_names = {"on": "InnoDB TDE", "fscrypt": "InnoDB on fscrypt", "gocryptfs": "InnoDB on gocryptfs"}
    kernel_worker_crypto = ("fscrypt",)  # its reads decrypt in kworker threads: per-page cost = server + kworker CPU
    dsn_schemes = ("mysql", "mariadb")
    default_port = 3306
    wire_protocol = "mysql"
    tls_view = "Ssl_version/Ssl_cipher"
    metered = "server"  # --meter instructions: the private server under callgrind, its statements counted (meter.py)
    metered_workloads = maria_meter.CONNECTIONS
    meter_refusal = ("the count covers statements (do_command): not a connection's set-up (connect), nor InnoDB's "
                     "background threads, where pages are decrypted on read-ahead and encrypted on flush (at rest)")
    instruction_groups = (("MariaDB network and TLS code", r"mariadbd", r"^(vio_|my_net_|net_|Protocol::|my_real_read)"),
                          ("MariaDB (other)", r"mariadbd", r""))
    crypto_roles = {"AES-GCM": "the TLS record cipher and MAC", "AES-CBC": "the TLS record cipher",
                    "ChaCha20-Poly1305": "the TLS record cipher and MAC", "SHA-512": "the TLS record MAC (HMAC-SHA384)",
                    "SHA-256": "the TLS record MAC"}

    def tls_preamble(self, sock, label: str) -> None:
        wire.mysql_preamble(sock, label)

    def start_scan_server(self, settings: dict):
        return maria_server.start(settings, base=maria_server.BENCH, tls=True)

    def check_dsn(self, dsn: str, what: str = "--dsn") -> None:
        parse_dsn(dsn, what)

    def live_rates_reader(self, dsn: str):
        """estimate --live: every bill term's counter (engines/mariadb/live.py), read-only."""
        return maria_live.sampler(self._live_connect(dsn))

    @staticmethod
    def _live_connect(dsn: str):
        my = pymysql()
        params = parse_dsn(dsn, "--live")
        try:
            return connect_bounded(params, autocommit=True)
        except my.err.MySQLError as e:
            raise EngineUnavailableError(f"cannot connect to --live: {unreachable(e, where_of(params)) or first_line(e)}",
                                         hint="check the DSN (user, password, host, port) and that the server is running") from None

    def __init__(self) -> None:
        self._servers: dict[str, maria_server.MariaServer | None] = {}
        self._fs_servers: dict[str, dict[str, maria_server.MariaServer]] = {}  # schema -> value -> server
        self._mounts: dict[str, filesystems.Mounts] = {}  # schema -> the run's filesystems

    def tables(self) -> tuple[Table, ...]:
        return (
            Table("Encryption at rest: InnoDB table ENCRYPTED=YES vs NO", "encryption", "off", AT_REST + SORT,
                  ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu", "client_cpu",
                   "innodb_pages", "server_ctx", "verdict"), dict(self.metric_words)),
            Table("Encryption in transit: TLS vs none", "tls", "off", IN_TRANSIT,
                  ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu", "client_cpu",
                   "d_client_cpu", "server_per_unit", "d_server_per_unit", "server_ctx", "net", "rate", "d_rate", "verdict"),
                  dict(self.metric_words)),
            Table("In-query hash: k concurrent sessions vs 1", "sessions", "1", ("hash",), sweep.TABLE_COLUMNS,
                  dict(self.metric_words)),
            Table("Column encryption: in the server (maria-aes) or the client vs none", "method", "none", ("column",),
                  maria_column.TABLE_COLUMNS, dict(self.metric_words)),
            self._oltp_table("encryption"),
        )

    @staticmethod
    def _oltp_table(axis: str) -> Table:
        what = "InnoDB tables ENCRYPTED=YES vs NO" if axis == "encryption" else "TLS vs none"
        return Table(f"OLTP (sysbench), a share of the data in memory: {what}", axis, "off", OLTP,
                     maria_oltp.TABLE_COLUMNS, dict(MariaDBEngine.metric_words))

    def run_tables(self, variants: dict) -> tuple[Table, ...]:
        """oltp compares tls when the run varies it (encryption then fixed: oltp.check_variants), else encryption."""
        axis = maria_oltp.axis([v for vs in variants.values() for v in vs])
        return tuple(self._oltp_table(axis) if t.workloads == OLTP else t for t in self.tables())

    def plan_keys(self, keys, filters: dict, workloads: list[str], options: dict):
        """With --dsn, `memory` varies nothing (encbench never resizes that server's pool) and the server's startup
        options (knobs.py) are never changed: each refused if named."""
        if not options.get("dsn"):
            return keys
        refused = {k.name: k for k in (DSN_MEMORY, *maria_knobs.dsn_keys())}  # startup options: never a restart
        for name, key in refused.items():
            for value in filters.get(name, []):
                key.validate(value)  # one line: what encbench will not do to a --dsn server
        return tuple(refused.get(k.name, k) for k in keys)

    def check_variants(self, variants: list[Variant]) -> None:
        fs = filesystems.wanted(v.get("encryption", "") for v in variants)
        named = next((maria_knobs.server_key(v) for v in variants if maria_knobs.server_key(v)), None)
        if fs and named:
            raise BadValueError(f"encryption={fs[0]} and {named} in one run: each needs servers of its own",
                                hint="measure the filesystems and the server's settings in separate runs")

    # -- encbench advise (issue 24): knobs.py ----------------------------------------------
    knobs = maria_knobs.KNOBS
    # sysbench's read-only and write-only scripts where the pool holds a quarter and a tenth of the data: every cell
    # reads or writes pages (at 100% none is read, and a 3 s mix flushes none), reads alone in one script and beside
    # as many writes in the other; oltp_read_write and oltp_point_select are left to the held-out check
    calibration_variants = ("script=oltp_read_only,oltp_write_only", "memory=25%,10%", "encryption=off,on")
    calibration_absent = {"commits": COMMITS_AS_LOG}
    calibration_not_fitted = maria_live.NOT_FITTED  # the bill's terms calibrate's mixes do not fit
    calibration_transit_variants = ("tls=off,on", "clients=1")  # connect, bulk, roundtrip, storm: TLS off and on

    def advise_sweeps(self, quick: bool, options: dict) -> list:
        return maria_knobs.sweeps(quick, options, self._missing_knobs(options))

    def advise_notes(self, quick: bool, options: dict) -> list[str]:
        return maria_knobs.skipped(options, self._missing_knobs(options))

    @staticmethod
    def _missing_knobs(options: dict) -> dict[str, str]:
        return {} if options.get("dsn") else maria_knobs.unavailable(maria_knobs.server_version())

    def raw_cipher_key(self, variant: dict, page_size: int) -> str:
        """'16384' for the server's own cipher, '16384/aes_cbc' for a named encryption_algorithm."""
        algo = variant.get("encryption_algorithm")
        return f"{page_size}/{algo}" if algo else str(page_size)

    def check_available(self) -> None:
        pymysql()

    def versions(self) -> dict[str, str]:
        return {"pymysql": pymysql().__version__}

    # -- server and data -----------------------------------------------------------------
    def prepare(self, ctx: PrepareContext) -> dict:
        my = pymysql()
        req = _request(ctx)
        server, conn_params, admin_params = self._start_or_reach(ctx, req)
        setup = _base_setup(ctx, req, server, conn_params, admin_params)
        self._servers[req.schema] = server
        try:
            admin = _connect(my, admin_params, "the MariaDB server")
            setup["_answered"] = True  # the clean-up may reconnect (never to a server that did not answer)
            try:
                if server is None:  # what killed runs left here goes first, before anything is measured
                    setup["_journal"] = maria_state.open_journal(admin, admin_params)
                cur = admin.cursor()
                _read_facts(cur, req, setup, server, conn_params)
                _create_main(cur, ctx, req, setup, conn_params)
            finally:
                admin.close()
            if req.fs_values:
                self._prepare_filesystems(ctx, setup, req.fs_values, req.settings, req.pool_mb)
            for keys, startup in req.groups[1:]:
                self._prepare_knob_server(ctx, setup, keys, startup, dict(req.settings, **startup), req.base,
                                          req.pool_mb, _of_keys(req.at_rest, keys), _of_keys(req.oltp, keys))
            if server is not None:
                self._checkpoint(ctx, setup, server, admin_params)
            if req.transit or req.hashing:
                _read_into_pool(my, req, admin_params)
        except my.err.MySQLError as e:
            self.cleanup(setup)
            raise EngineUnavailableError(f"setting up the MariaDB schema failed: {first_line(e)}",
                                         hint="the user needs CREATE, DROP, INSERT, SELECT and CREATE ROUTINE") from None
        except BaseException:
            self.cleanup(setup)
            raise
        return setup

    def _start_or_reach(self, ctx: PrepareContext, req: "_Request") -> tuple:
        """(the private server started, or None for --dsn; the parameters of the benchmark's connections and of
        the admin's). A private server's filesystems are made first (its data goes on the plain one)."""
        if req.dsn:
            return None, dict(req.dsn_params), dict(req.dsn_params)
        if req.oltp:  # the oltp runs size the pool themselves (oltp.py); the data loads through this one
            maria_oltp.check_free_space(Path(tempfile.gettempdir()), maria_oltp.size_for(ctx.size_bytes, req.oltp)[0],
                                        req.oltp, servers=sum(1 for keys, _ in req.groups if _of_keys(req.oltp, keys)))
        mounts = None
        if req.fs_values:
            mounts = self._mounts[req.schema] = filesystems.Mounts()
            try:
                mounts.create(req.fs_values, filesystems.image_bytes(req.rows * INNODB_ROW_BYTES), ctx.progress)
            except BaseException:
                self._destroy_mounts(req.schema)
                raise
        ctx.progress(f"starting a private MariaDB server (buffer pool {req.pool_mb} MB"
                     + (", data on the plain filesystem)" if mounts else ")"))
        try:
            server = maria_server.start(dict(req.settings, **req.groups[0][1]), base=req.base,
                                        buffer_pool_mb=req.pool_mb, tls=True, keep=bool(ctx.options.get("keep")),
                                        data_root=mounts.by_value["off"].path if mounts else None,
                                        client_cert=maria_oltp.tls_wanted(req.oltp_main), meter=ctx.meter or None)
        except BaseException:
            self._destroy_mounts(req.schema)
            raise
        return server, server.handle.tcp_params(), {"unix_socket": str(server.handle.socket), "user": "root"}

    def _checkpoint(self, ctx: PrepareContext, setup: dict, server, admin_params: dict) -> None:
        """The private servers restarted: the data load's redo is in no backup or restart; InnoDB's own pages in
        a fresh pool, each oltp run's pool sized beside them."""
        my = pymysql()
        ctx.progress("restarting the private server (checkpoint after the data load)")
        server.handle.restart()
        for other in self._fs_servers.get(setup["schema"], {}).values():
            other.handle.restart()
        for params, own in [(admin_params, setup)] + [(o["_admin"], o) for o in _knob_overrides(setup)]:
            if own.get("oltp"):
                admin = _connect(my, params, "the MariaDB server")
                try:
                    maria_oltp.after_start(admin.cursor(), own)
                finally:
                    admin.close()

    def _prepare_filesystems(self, ctx: PrepareContext, setup: dict, values: list[str], settings: dict,
                             pool_mb: int) -> None:
        """A server per filesystem value on its mount, the same plain table (same rows, same seed) in each."""
        my = pymysql()
        schema, mounts = setup["schema"], self._mounts[setup["schema"]]
        servers = self._fs_servers.setdefault(schema, {})
        for value in filesystems.BASELINE_VALUES:
            if value in setup["tables"]:
                setup["filesystems"][value] = filesystems.describe(mounts.by_value["off"])
        for value in values:
            mount = mounts.by_value[value]
            ctx.progress(f"starting a private MariaDB server on the {value} filesystem (buffer pool {pool_mb} MB)")
            srv = servers[value] = maria_server.start(settings, base=maria_server.FS_BENCH, buffer_pool_mb=pool_mb,
                                                      tls=True, data_root=mount.path)
            setup["filesystems"][value] = filesystems.describe(mount)
            setup.setdefault("_servers", {})[value] = {
                "_handle": srv.handle.to_dict(), "_conn": srv.handle.tcp_params(),
                "_admin": {"unix_socket": str(srv.handle.socket), "user": "root"}}
            admin = _connect(my, setup["_servers"][value]["_admin"], f"the MariaDB server on {value}")
            try:
                cur = admin.cursor()
                cur.execute(f"CREATE DATABASE {schema}")
                ctx.progress(f"generating the table on {value} ({setup['rows']:,} rows)")
                maria_tables.load_plain(cur, schema, setup["rows"], ctx.seed)
                maria_tables.finish_table(cur, setup, value, "plain", f"{value}/plain")
            finally:
                admin.close()

    def _prepare_knob_server(self, ctx: PrepareContext, setup: dict, keys: list[str], startup: dict, settings: dict,
                             base: dict, pool_mb: int, at_rest: list[Variant], oltp: list[Variant]) -> None:
        """A private server started with a configuration of named knobs, holding the data of its variants (the
        same rows, the same seed); the sessions of those variants use it (setup["_knob_servers"])."""
        my = pymysql()
        schema = setup["schema"]
        shown = ", ".join(f"{k}={v}" for k, v in startup.items()) or "the defaults"
        ctx.progress(f"starting a private MariaDB server with {shown} (buffer pool {pool_mb} MB)")
        srv = maria_server.start(settings, base=base, buffer_pool_mb=pool_mb, tls=True,
                                 client_cert=maria_oltp.tls_wanted(oltp))
        self._fs_servers.setdefault(schema, {})[",".join(keys)] = srv  # stopped by cleanup with the others
        own: dict = {"schema": schema, "rows": setup["rows"], "seed": setup["seed"], "tables": {}, "markers": {},
                     "_handle": srv.handle.to_dict(), "_conn": srv.handle.tcp_params(),
                     "_admin": {"unix_socket": str(srv.handle.socket), "user": "root"}, "startup_settings": startup}
        if maria_oltp.tls_wanted(oltp):
            own["_oltp_tls"] = {k: str(v) for k, v in srv.handle.client_tls.items()}
        admin = _connect(my, own["_admin"], f"the MariaDB server with {shown}")
        try:
            cur = admin.cursor()
            own["instance_settings"] = maria_facts.instance_settings(cur)
            cur.execute(f"CREATE DATABASE {schema}")
            if at_rest:
                maria_tables.create_at_rest(cur, ctx, own, {v["encryption"] for v in at_rest})
            if oltp:
                maria_oltp.prepare(cur, ctx, own, oltp, _sysbench_address(own["_conn"]), check_table)
        finally:
            admin.close()
        keep = ("_handle", "_conn", "_admin", "tables", "markers", "table_encryption", "oltp", "_oltp_tls",
                "instance_settings", "startup_settings")
        override = {k: own[k] for k in keep if k in own}
        for key in keys:
            setup.setdefault("_knob_servers", {})[key] = override
        setup.setdefault("knob_servers", {})[",".join(keys)] = startup  # what the result file says

    def _destroy_mounts(self, key) -> None:
        mounts = self._mounts.pop(key, None)
        problems = mounts.destroy() if mounts is not None else []
        if problems:
            raise FilesystemUnavailableError(f"clean-up of the MariaDB filesystems incomplete: {'; '.join(problems)}",
                                             hint="run `encbench cleanup` once nothing uses them")

    def apply_variant(self, setup: dict, variant: Variant, workload: str = "") -> dict:
        return {}

    def cleanup(self, setup: dict) -> None:
        server = self._servers.pop(setup.get("schema"), None)
        fs_servers = self._fs_servers.pop(setup.get("schema"), {})
        if server is not None or fs_servers:
            try:
                for srv in fs_servers.values():  # each stopped before its filesystem goes
                    srv.stop()
                if server is not None:
                    if server.keep:
                        return  # --keep: the server and its tables stay for inspection
                    server.stop()
            finally:
                self._destroy_mounts(setup.get("schema"))
            return
        if "schema" not in setup or "_admin" not in setup or not setup.get("_answered"):
            return  # nothing was created; a server that never answered is not asked again
        my = pymysql()
        journal = setup.get("_journal")
        try:
            admin = _connect(my, setup["_admin"], "the MariaDB server")
            try:
                if journal is not None:  # its databases (oltp's too) dropped, compare-and-swap, then the journal
                    maria_state.restore(admin, journal)
                else:
                    for schema in [*(setup.get("oltp") or {}).get("schemas", {}).values(), setup["schema"]]:
                        admin.cursor().execute(f"DROP DATABASE IF EXISTS {schema}")
            finally:
                admin.close()
        except (my.err.MySQLError, EngineUnavailableError) as e:
            if journal is not None and journal.path is not None and journal.path.exists():
                restore_journal.note(
                    f"could not drop the database this run made ({setup['schema']}): "
                    f"{e.one_line() if isinstance(e, EngineUnavailableError) else first_line(e)}; {journal.path} "
                    f"keeps it: the next `encbench run --dsn` against this server drops it first")

    def calibrate(self, setup: dict) -> dict:
        out = {}
        if setup.get("hash_functions"):
            out["raw_hash"] = {f: rawhash.raw_hash(f) for f in setup["hash_functions"]}
        out.update(column_base.raw_reference(setup))
        if not any("on" in own.get("tables", {}) or "on" in (own.get("oltp") or {}).get("schemas", {})
                   for own in [setup, *_knob_overrides(setup)]):
            return out
        algo = (setup.get("server") or {}).get("encryption_algorithm") or maria_facts.DEFAULT_ALGORITHM  # its own word
        ps = setup["page_size"]
        # the server's own cipher, and each named encryption_algorithm's (raw_cipher_key): each mode measured once
        modes = {str(ps): algo.upper()[-3:],
                 **{f"{ps}/{a}": a.upper()[-3:] for a in setup.get("encryption_algorithms", [])}}
        speed = {mode: rawcipher.aes_page(ps, mode) for mode in sorted(set(modes.values()))}
        return dict(out, raw_cipher={key: speed[mode] for key, mode in modes.items()})

    def open_session(self, setup: dict, variant: Variant, *, mutable: bool, scratch_dir: Path) -> Session:
        return MariaSession(setup, variant, scratch_dir, mutable=mutable)

    # -- leak-check --------------------------------------------------------------------
    def leak_check(self, options: dict, workdir: Path):
        if options.get("dsn"):  # an existing server on this host: leakcheck.py (never restarted or SET)
            if options.get("settings"):
                raise UsageError("--setting configures the private server; an existing one is never reconfigured",
                                 hint="drop --setting, or drop --dsn")
            from . import leakcheck as existing

            return existing.leak_check_existing(options["dsn"], options, parse_dsn(options["dsn"]), existing.classify)
        from . import leakcheck as existing

        return existing.canary_check(options.get("settings", {}), workdir, existing.classify)

    def posture(self, dsn: str):
        """leak-check --posture: what the server's own settings say is encrypted (leakcheck.py)."""
        from . import leakcheck as existing

        return existing.posture(dsn, parse_dsn(dsn))


@dataclasses.dataclass
class _Request:
    """What a run asks of MariaDB, read and checked once before anything starts (prepare's steps share it)."""

    dsn: str | None
    dsn_params: dict | None
    settings: dict
    oltp: list
    at_rest: list
    transit: list
    hashing: list
    rows: int
    bulk_rows: int
    hash_rows: int
    fs_values: list
    base: dict
    groups: list  # (knob keys, startup settings) per server; the first is the main server's
    schema: str

    @property
    def at_rest_main(self) -> list:
        return _of_keys(self.at_rest, set(self.groups[0][0]))

    @property
    def oltp_main(self) -> list:
        return _of_keys(self.oltp, set(self.groups[0][0]))

    @property
    def pool_mb(self) -> int:
        """A private server's buffer pool: the tables it holds, in 128 MB steps."""
        pool_mb = 128 + (3 * self.rows * INNODB_ROW_BYTES + self.bulk_rows * 1300 + self.hash_rows * 80) // (1 << 20)
        return -(-pool_mb // 128) * 128


def _request(ctx: PrepareContext) -> _Request:
    """The run's variants sorted by what they need, every refusal said before anything is made."""
    opts = ctx.options
    dsn, settings = opts.get("dsn"), dict(opts.get("settings") or {})
    oltp = maria_oltp.variants_of(ctx.variants)  # its own encryption/tls values: two schemas, sysbench's TLS
    at_rest = [v for v in ctx.variants if "encryption" in v and v not in oltp]
    if oltp:
        maria_oltp.check_variants(oltp, dsn=bool(dsn))
        sysbench.binary()  # missing: one line (exit 10) before any server starts
    hashing = [v for v in ctx.variants if "function" in v]  # the hash workload (a column sweep: sessions only)
    dsn_params = parse_dsn(dsn) if dsn else None
    fs_values = filesystems.wanted(v["encryption"] for v in at_rest)
    _check_options(opts, settings, at_rest, fs_values, set(ctx.params))
    maria_knobs.check_settings(settings, ctx.variants)
    base = maria_server.FS_BENCH if fs_values else maria_server.BENCH
    base = dict(base, **maria_oltp.SERVER_SETTINGS) if oltp else base
    # issue 24: a server per configuration of named startup knobs (the first on the main server); each holds
    # the data of its own variants
    groups = maria_knobs.server_groups(ctx.variants, dict(base, **settings))
    if len(groups) > 1 and opts.get("keep"):
        raise UsageError(f"--keep keeps the private server, but {groups[1][0][0]} runs a server of its own that "
                         "is removed at the end", hint="drop --keep, or measure one configuration of the knobs")
    req = _Request(dsn=dsn, dsn_params=dsn_params, settings=settings, oltp=oltp, at_rest=at_rest,
                   transit=[v for v in ctx.variants if "tls" in v and v not in oltp], hashing=hashing,
                   rows=datagen.row_count_for(ctx.size_bytes) if at_rest else 0,
                   bulk_rows=int(ctx.params.get("bulk", {}).get("rows", 0)),
                   hash_rows=int(ctx.params["hash"]["hash_rows"]) if hashing else 0,
                   fs_values=fs_values, base=base, groups=groups, schema=f"encbench_{secrets.token_hex(4)}")
    if at_rest and not dsn:  # the plain table, its encrypted copy, a copy per filesystem: in the temp directory
        tables = sum(len({v["encryption"] for v in _of_keys(at_rest, keys)}) for keys, _ in groups) + len(fs_values)
        check_free_space(tempfile.gettempdir(), tables * req.rows * INNODB_ROW_BYTES,
                         what=f"--size {fmt_bytes(ctx.size_bytes)} ({tables} table{'s' if tables > 1 else ''} of "
                              f"{req.rows:,} rows in the private server)",
                         hint="free some space in the temporary directory (TMPDIR), or a smaller --size")
    return req


def _check_options(opts: dict, settings: dict, at_rest: list, fs_values: list, workloads: set) -> None:
    """What --dsn and --keep cannot do (an external server is never restarted or reconfigured; a filesystem is
    removed at the end), and the filesystems' own checks (root, tools, ciphers)."""
    dsn = opts.get("dsn")
    if dsn:
        if opts.get("keep"):
            raise UsageError("--keep applies to the private server; with --dsn nothing is started",
                             hint="drop --keep, or drop --dsn to let encbench start a server")
        if settings:
            raise UsageError("--setting changes the private server's configuration; an external server is never "
                             "reconfigured", hint="drop --setting, or drop --dsn")
        if any(v.get("cache") == "cold" for v in at_rest):
            raise UsageError("cache=cold restarts the server before each operation: only on the private server",
                             hint="with --dsn add --variant cache=warm")
        if "backup" in workloads:
            raise UsageError("the backup workload reads the server's data directory: only on the private server",
                             hint="with --dsn leave out --workload backup (name the others)")
    if fs_values and dsn:
        raise UsageError(f"encryption={fs_values[0]} puts a private server's data directory on an encrypted "
                         "filesystem: not with --dsn", hint="drop --dsn, or --variant encryption=off,on")
    if fs_values and opts.get("keep"):
        raise UsageError(f"--keep keeps the private server, but encryption={fs_values[0]} removes its "
                         "filesystems at the end", hint="drop --keep, or --variant encryption=off,on")
    if fs_values:
        filesystems.check(fs_values)


def _base_setup(ctx: PrepareContext, req: _Request, server, conn_params: dict, admin_params: dict) -> dict:
    setup: dict = {"managed": server is not None, "schema": req.schema, "_conn": conn_params, "_admin": admin_params,
                   "wait_interval_s": float(ctx.options.get("wait_interval") or DEFAULT_INTERVAL_S),
                   "rows": req.rows, "seed": ctx.seed, "generator_version": datagen.GENERATOR_VERSION,
                   "dsn": redact(req.dsn) if req.dsn else None, "tables": {}, "markers": {}}
    if req.fs_values:
        setup["filesystems"] = {}
        setup["fs_instance_settings"] = ("InnoDB instance-level encryption off on every server, as on a stock "
                                         "server (server.FS_BENCH)")
    algorithms = sorted({v["encryption_algorithm"] for v in ctx.variants if "encryption_algorithm" in v})
    if algorithms:  # each its own raw cipher reference (calibrate)
        setup["encryption_algorithms"] = algorithms
    return setup


def _read_facts(cur, req: _Request, setup: dict, server, conn_params: dict) -> None:
    """The server's own word (version, page size, plugins, TLS, performance_schema) in the setup; a variant the
    server cannot run refused."""
    facts = maria_facts.server_facts(cur, conn_params)
    setup["server"] = facts
    setup["page_size"] = int(facts["innodb_page_size"])
    # the waits probe: a private server's wait instruments turned on while it samples (waits.py); a --dsn
    # server's only when its own settings have them on
    setup["waits_on_demand"] = server is not None and facts["performance_schema"] == "ON"
    setup["performance_schema"] = facts["performance_schema"] == "ON" and (
        facts["waits_consumer"] or setup["waits_on_demand"])
    setup["instance_encrypts_tables"] = facts["innodb_encrypt_tables"] != "OFF"
    setup["versions"] = {"mariadb_server": facts["version"]}
    if server is not None:
        setup["_handle"] = server.worker_handle()
        if server.handle.wrapper:  # --meter instructions (meter.py)
            setup["meter"] = {"dir": str(server.handle.meter_dir), "marker": maria_meter.MARKER_SQL}
        setup["instance_settings"] = maria_facts.instance_settings(cur)  # the server's own word
        setup["mariadb_backup"] = maria_server.binaries().get("mariadb-backup")
        if maria_oltp.tls_wanted(req.oltp_main):  # sysbench's TLS files (sysbench.Workdir.with_tls)
            setup["_oltp_tls"] = {k: str(v) for k, v in server.handle.client_tls.items()}
        if server.keep:
            setup["kept_server"] = server.how_to_connect()
    if any(v["encryption"] == "on" for v in req.at_rest + req.oltp) and not facts["encryption_plugins"]:
        raise EngineUnavailableError(
            "the server has no active encryption plugin (e.g. file_key_management): "
            "encrypted tables cannot be created",
            hint="load a key management plugin on the server, or run with --variant encryption=off")
    if any(v.get("tls", "off") != "off" for v in req.transit + req.oltp) and facts["have_ssl"] != "YES":
        raise EngineUnavailableError(f"the server has TLS off (have_ssl={facts['have_ssl']}): "
                                     "TLS variants cannot run",
                                     hint="configure ssl_cert/ssl_key on the server, or --variant tls=off")


def _create_main(cur, ctx: PrepareContext, req: _Request, setup: dict, conn_params: dict) -> None:
    """The run's database on the main server (a --dsn server's written down before it is made, taken out again
    when it cannot be) and every table its variants read."""
    maria_state.create_database(cur, setup.get("_journal"), req.schema, main=True)
    maria_column.prepare(setup, ctx)
    if req.at_rest_main:
        maria_tables.create_at_rest(cur, ctx, setup, {v["encryption"] for v in req.at_rest_main})
    if req.transit:
        ctx.progress("creating the in-transit tables")
        maria_tables.create_transit(cur, req.schema, req.bulk_rows)
    if req.oltp_main:
        maria_oltp.prepare(cur, ctx, setup, req.oltp_main, _sysbench_address(conn_params), check_table)
    if req.hashing:
        cur.execute("SELECT @@max_connections")
        check_sessions_fit(max(int(v["sessions"]) for v in req.hashing), int(cur.fetchone()[0]))
        ctx.progress(f"creating the hash table ({req.hash_rows:,} rows)")
        maria_tables.create_hash_table(cur, req.schema, req.hash_rows)
        setup["hash_rows"] = req.hash_rows
        setup["hash_functions"] = sorted({v["function"] for v in req.hashing})


def _read_into_pool(my, req: _Request, admin_params: dict) -> None:
    """The in-transit and hash tables read once: they are read from the buffer pool, never from storage."""
    admin = _connect(my, admin_params, "the MariaDB server")
    try:
        cur = admin.cursor()
        for table, col in (("bulk", "payload"), ("rt", "v"), ("hashsrc", "v")):
            if table == "hashsrc" and not req.hashing or table != "hashsrc" and not req.transit:
                continue
            cur.execute(f"SELECT COUNT(*), SUM(LENGTH({col})) FROM {req.schema}.{table}")
    finally:
        admin.close()


def _of_keys(variants: list[Variant], keys) -> list[Variant]:
    """The variants a server of these knob keys runs (knobs.server_key)."""
    return [v for v in variants if maria_knobs.server_key(v) in keys]


def _knob_overrides(setup: dict) -> list[dict]:
    """Each server of named knobs once (several keys may share one)."""
    return list({id(o): o for o in setup.get("_knob_servers", {}).values()}.values())


def _sysbench_address(c: dict) -> sysbench.Address:
    return sysbench.Address(c.get("host", "localhost"), int(c.get("port", 3306)), c.get("user", ""),
                            str(c.get("password", "")), c.get("unix_socket"))


def _connect(my, params: dict, what: str):
    """Connect, greet and log in within CONNECT_TIMEOUT_S each (never a hang on a silent port)."""
    try:
        return connect_bounded(params, autocommit=True)
    except my.err.MySQLError as e:
        why = unreachable(e, where_of(params))
        raise EngineUnavailableError(f"cannot connect to {what}: {why or first_line(e)}",
                                     hint="check --dsn (user, password, host, port) and that the server is running") from None
