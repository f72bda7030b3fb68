"""PostgreSQL: encryption in transit (TLS on the wire protocol), with the server's own view.

Managed mode (default) starts a private server (server.py); external mode measures a
server given by --dsn / PG* variables and changes nothing on it unless
--allow-reconfigure. Every measured connection's TLS state is read from pg_stat_ssl
(session.py); a connection not in the requested state fails the run (CheckFailedError).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

from ...errors import EncbenchError, EngineUnavailableError, FilesystemUnavailableError, UsageError
from ...probes.waits import DEFAULT_INTERVAL_S
from ...util.files import check_free_space
from ...util.redact import redact
from ...util.units import fmt_bytes
from ...vocab.live import COMMITS_AS_LOG
from ...vocab.tls import DEFAULT_TLS, TLS_RE, check_tls
from ...vocab.variants import Variant, VariantKey, int_validator
from ...util import interrupts
from ..local.server import unprivileged_user
from ...vocab import datagen
from ...host import encfs
from ...host import memcg
from ...host import rawhash
from ...vocab import oltp as oltp_workload
from ...vocab import sweep
from . import atrest, client, knobs as pg_knobs
from . import oltp
from . import external
from . import objects as pg_objects
from .external import SSL_SETTINGS
from . import column as pg_column
from . import meter as pg_meter
from .. import column_base
from . import pgbench
from . import server as pg_server
from . import state as pg_state
from .. import wire
from ..base import Engine, PrepareContext, Session, Table
from .client import connect_admin
from .session import HASH_FUNCTIONS, PgSession

IN_TRANSIT = ("storm", "roundtrip", "bulk", "connect")
OLTP = "oltp"
AT_REST_FILES = atrest.AT_REST + (OLTP,)  # the workloads on the at-rest clusters' filesystems

# oltp is measured on either axis, one at a time (plan_keys): TLS by default (off,on), encryption at rest when
# --variant encryption=... names it; memory comes before tls so that a round changes shared_buffers (a restart)
# at most twice
VARIANT_KEYS = (
    VariantKey("encryption", "the filesystem under the private cluster's data directory, WAL and temporary files: "
               "off (a loop-mounted ext4 image), fscrypt (the same image, ext4 encryption, AES-256-XTS in the "
               "kernel), gocryptfs (FUSE over the same image, AES-256-GCM in userspace); needs root (oltp: the "
               "axis instead of tls)",
               tuple(atrest.ENCRYPTION_KINDS), tuple(atrest.ENCRYPTION_KINDS), workloads=atrest.AT_REST + (OLTP,),
               named_only=(OLTP,)),
    VariantKey("cache", "cold: the server restarted and the OS page cache of its files dropped before each "
               "operation; warm: the table and its indexes in shared_buffers (pg_prewarm)", ("cold", "warm"),
               ("cold", "warm"), workloads=atrest.CACHED),
    oltp_workload.memory_key(),
    VariantKey("tls", "TLS on the connection: off, on (as negotiated) or PROTOCOL:SUITE (the only suite the client "
               "offers; on a private server the only one the server accepts too)",
               DEFAULT_TLS, validate=check_tls, workloads=IN_TRANSIT + (OLTP,),
               workload_defaults=((OLTP, ("off", "on")),)),
    VariantKey("clients", "concurrent client connections", ("1", "2"),
               validate=int_validator("clients", lambda n: 1 <= n <= 256, "use 1 to 256"),
               workloads=("roundtrip", OLTP), workload_defaults=((OLTP, ("1",)),)),
    # issue 24's knobs (knobs.py): each takes part only when named, so labels and file names stay as they were
    VariantKey("ecdh_curve", "the server's key exchange group for TLS as negotiated (tls=on): ALTER SYSTEM SET "
               "ssl_ecdh_curve (PostgreSQL 18: ssl_groups) and a reload, proven per run by a handshake's negotiated "
               "group; on --dsn only with --allow-reconfigure; only when named",
               (pg_knobs.DEFAULT_CURVE,), tuple(pg_knobs.CURVES), applies_when=(("tls", "on"),), workloads=IN_TRANSIT,
               named_only=IN_TRANSIT),
    VariantKey("connection", "oltp: pgbench's clients keep their connection (reused, as behind a pooler) or open a "
               "new one per transaction (per-transaction: pgbench -C); proven per run by the sessions the server "
               "counted; only when named", ("reused",), tuple(pg_knobs.CONNECTIONS), workloads=(OLTP,),
               named_only=(OLTP,)),
    VariantKey("gocryptfs_cipher", "encryption=gocryptfs: the content cipher chosen at gocryptfs -init: aes-gcm "
               "(AES-256-GCM, default), xchacha (XChaCha20-Poly1305), aessiv (AES-SIV-512); proven per run by "
               "gocryptfs -info; only when named", (encfs.OPTIONS["gocryptfs"]["cipher"][0],),
               encfs.OPTIONS["gocryptfs"]["cipher"][1], applies_when=(("encryption", "gocryptfs"),),
               workloads=AT_REST_FILES, named_only=AT_REST_FILES),
    VariantKey("fscrypt_policy", "encryption=fscrypt: the policy's contents mode: aes-256-xts (default, names "
               "AES-256-CTS), adiantum, aes-128-cbc (ESSIV), where the kernel has it; proven per run by fscrypt "
               "status; only when named", (encfs.OPTIONS["fscrypt"]["policy"][0],),
               encfs.OPTIONS["fscrypt"]["policy"][1], applies_when=(("encryption", "fscrypt"),),
               workloads=AT_REST_FILES, named_only=AT_REST_FILES),
    oltp_workload.script_key(oltp.SCRIPTS),
    sweep.function_key(HASH_FUNCTIONS, "sha256"),
    sweep.sessions_key(),
    pg_column.method_key(),
)
OLTP_COLUMNS = ("workload", "op", "variant", "rate", "d_rate", "server_per_unit", "d_server_per_unit",
                "client_per_unit", "reads", "server_ctx", "verdict")


def server_settings(tls: str) -> dict[str, str] | None:
    """The ssl_* settings a tls variant needs on the server; None: the server's defaults."""
    m = TLS_RE.match(tls)
    if not m:
        return None
    proto, suite = m.group(1), m.group(2)
    out = {"ssl_min_protocol_version": proto, "ssl_max_protocol_version": proto}
    if proto == "TLSv1.2":
        out["ssl_ciphers"] = suite
    return out


class PostgresEngine(Engine):
    name = "postgres"
    description = ("PostgreSQL over TCP with TLS off, on and forced suites (private server on loopback, or --dsn); "
                   "at rest on plain, fscrypt and gocryptfs filesystems (private clusters, root); oltp: pgbench's "
                   "scripts with a share of the data in memory, on either axis")
    variant_keys = VARIANT_KEYS
    axis, axis_baseline = "tls", "off"
    workloads = IN_TRANSIT + atrest.AT_REST + ("hash", "column", OLTP)
    default_workloads = IN_TRANSIT
    # --quick: TLS: queries on one connection, plain against TLS as negotiated
    quick_workloads, quick_variants = ("roundtrip",), ("tls=off,on", "clients=1")
    session_class = PgSession
    profile_categories = (("postgres", r"postgres", r""),)
    options = ("dsn", "keep", "allow_reconfigure", "wait_interval", "settings")
    table_columns = ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu", "d_server_cpu",
                     "client_cpu", "d_client_cpu", "server_per_unit", "d_server_per_unit", "server_ctx", "net", "rate", "d_rate",
                     "verdict")
    metric_words = {"cpu_s": "server CPU", "client_cpu_s": "client CPU"}
    label = "PostgreSQL"
    heldout_setups = {"at rest": "fscrypt", "in transit": "tls"}
    open_includes = "TCP connect, TLS handshake when on, login and the backend's start included"
    dsn_schemes = ("postgresql", "postgres")
    default_port = 5432
    at_rest_names = {"fscrypt": "PostgreSQL on fscrypt", "gocryptfs": "PostgreSQL on gocryptfs"}
    raw_cipher_values = ("fscrypt",)  # the calibration is fscrypt's mode (AES-256-XTS) in userspace
    kernel_worker_crypto = ("fscrypt",)  # its reads decrypt in kworker threads: per-page cost = server + kworker CPU
    wire_protocol = "postgres"
    direct_tls_alpn = "postgresql"  # PostgreSQL 17+: TLS without the SSLRequest
    metered = "server"  # --meter instructions: the private server under callgrind (meter.py)
    metered_workloads = IN_TRANSIT
    meter_refusal = ("at rest the cipher runs in the kernel (fscrypt) or a FUSE daemon (gocryptfs), outside the server "
                     "valgrind runs; the hash and column sweeps' concurrent sessions are not metered")
    instruction_groups = (
        ("PostgreSQL TLS and wire code", r"postgres", r"^(be_tls_|secure_read|secure_write|secure_raw|pq_|socket_)"),
        ("PostgreSQL (other)", r"/postgres$|plpgsql", r""),
    )
    crypto_roles = {"AES-GCM": "the TLS record cipher and MAC", "AES-CBC": "the TLS record cipher",
                    "ChaCha20-Poly1305": "the TLS record cipher and MAC", "SHA-512": "the TLS record MAC (HMAC-SHA384)",
                    "SHA-256": "the TLS record MAC or the handshake", "public-key (handshake)": "the TLS handshake",
                    "SHA-256@connect": "SCRAM-SHA-256 authentication and the handshake",
                    "SHA-512@connect": "the handshake"}
    tls_view = "pg_stat_ssl"

    def owns_dsn(self, dsn: str) -> bool:
        return super().owns_dsn(dsn) or ("=" in dsn and "://" not in dsn)  # libpq key=value

    def tls_preamble(self, sock, label: str) -> None:
        wire.postgres_preamble(sock, label)

    def start_scan_server(self, settings: dict):
        return pg_server.start(settings=settings)

    def check_dsn(self, dsn: str, what: str = "--dsn") -> None:
        external.parse_dsn(client.psycopg(), dsn, what)

    def client_offers(self, tls: str) -> bool:
        return client.offers(tls)

    def live_rates_reader(self, dsn: str):
        """estimate --live: every bill term's counter (engines/postgres/live.py), read-only."""
        from . import live

        return live.sampler(self._live_connect(dsn))

    @staticmethod
    def _live_connect(dsn: str):
        import psycopg

        external.parse_dsn(client.psycopg(), dsn, "--live")
        try:
            return psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise EngineUnavailableError(f"cannot connect to --live: {redact(str(e).splitlines()[0])}") from None

    def __init__(self) -> None:
        self._servers: dict[str, pg_server.PgServer | None] = {}
        self._clusters: dict[str, list] = {}  # schema -> [[server or None, mount]] of the at-rest clusters
        self._workdirs: dict[str, Path] = {}  # schema -> the at-rest filesystems' own directory (encfs.workdir)
        self._oltp_servers: dict[str, pg_server.PgServer] = {}  # schema -> the oltp workload's private server
        self._groups: dict[str, list[memcg.Group]] = {}  # schema -> the memory cgroups its servers run in

    def tables(self) -> tuple[Table, ...]:
        return (Table("Encryption at rest: the data directory on fscrypt / gocryptfs vs plain ext4", "encryption",
                      "off", atrest.AT_REST, ("workload", "op", "variant", "elapsed", "d_elapsed", "server_cpu",
                                              "d_server_cpu", "client_cpu", "reads", "server_ctx", "verdict"),
                      dict(self.metric_words)),
                Table("Encryption in transit: TLS vs none", "tls", "off", IN_TRANSIT, self.table_columns,
                      dict(self.metric_words)),
                Table("In-query hash: k concurrent sessions vs 1", "sessions", "1", ("hash",), sweep.TABLE_COLUMNS,
                      dict(self.metric_words)),
                Table("Column encryption: in the server (pg-*) or the client vs none", "method", "none", ("column",),
                      pg_column.TABLE_COLUMNS, dict(self.metric_words)),
                self.oltp_table("tls"))

    def oltp_table(self, axis: str) -> Table:
        title = {"tls": "OLTP (pgbench's scripts): TLS vs none",
                 "encryption": "OLTP (pgbench's scripts): the data directory on fscrypt / gocryptfs vs plain ext4"}
        return Table(title[axis], axis, "off", (OLTP,), OLTP_COLUMNS, dict(self.metric_words))

    def run_tables(self, variants: dict) -> tuple[Table, ...]:
        """oltp's table has the axis its variants vary: encryption when they name it, else tls."""
        axis = "encryption" if any("encryption" in v for v in variants.get(OLTP, ())) else "tls"
        return tuple(self.oltp_table(axis) if t.workloads == (OLTP,) else t for t in self.tables())

    def plan_keys(self, keys, filters: dict, workloads: list[str], options: dict):
        """oltp varies one axis at a time: tls (its private server) unless --variant encryption names the at-rest
        clusters, never both; on a --dsn server it changes no memory (the memory key is dropped, and refused when
        named). ecdh_curve is the server's setting: on --dsn only with --allow-reconfigure."""
        dsn = bool(options.get("dsn"))
        if dsn and "ecdh_curve" in filters and not options.get("allow_reconfigure"):
            raise UsageError("--variant ecdh_curve=... changes the server's ssl_ecdh_curve: on an external server "
                             "(--dsn) only with --allow-reconfigure (journaled, restored as found)",
                             hint="add --allow-reconfigure, or drop --variant ecdh_curve")
        if OLTP not in workloads:
            return keys
        if dsn and "memory" in filters:
            raise UsageError("--variant memory=... sizes a private server's memory: encbench changes nothing of an "
                             "external server's (--dsn)", hint="drop --variant memory (the run records the share of "
                             "the data the server's pool holds), or drop --dsn")
        at_rest = "encryption" in filters
        if at_rest and set(filters.get("tls", ["off"])) - {"off"}:
            raise UsageError("workload oltp measures one axis at a time: --variant encryption=... (the at-rest "
                             "clusters) or --variant tls=... (its TLS server), not both",
                             hint="run them as two runs, each with one of the two")
        out = []
        for k in keys:
            if dsn and k.name == "memory":
                continue
            if at_rest and k.name == "tls":
                k = dataclasses.replace(k, workloads=tuple(w for w in k.workloads or () if w != OLTP))
            out.append(k)
        return tuple(out)

    def check_available(self) -> None:
        client.psycopg()

    def versions(self) -> dict[str, str]:
        psycopg = client.psycopg()
        v = psycopg.pq.version()
        return {"psycopg": psycopg.__version__, "libpq": f"{v // 10000}.{v % 10000}"}

    # -- server -------------------------------------------------------------------
    def prepare(self, ctx: PrepareContext) -> dict:
        kinds = list(atrest.ENCRYPTION_KINDS)
        at_rest = dict(sorted({atrest.cluster_key(v): atrest.filesystem_of(v) for v in ctx.variants
                               if "encryption" in v}.items(), key=lambda kv: (kinds.index(kv[1][0]), kv[0])))
        dsn = ctx.options.get("dsn")
        oltp_runs = [v for v in ctx.variants if "script" in v]  # only oltp's variants have a script
        oltp_private = [v for v in oltp_runs if "encryption" not in v] if not dsn else []
        others = [v for v in ctx.variants if "encryption" not in v and v not in oltp_private]
        if ctx.options.get("settings"):
            raise UsageError("--setting is leak-check's for PostgreSQL (--setting encryption=KIND); a run chooses "
                             "the filesystem with --variant encryption=...", hint="drop --setting")
        atrest.check_no_dsn(ctx.options.get("dsn"), ctx.variants)
        atrest.check_no_keep(bool(ctx.options.get("keep")), ctx.variants)
        for enc, options in at_rest.values():  # every filesystem checked before anything is made (root, loop,
            encfs.check(atrest.ENCRYPTION_KINDS[enc])  # fuse, tools; the kernel's and the tool's ciphers)
            atrest.check_options(enc, options)
        parent = None
        if at_rest:  # the data directory, or None: a directory of their own (the default one out of the server's reach)
            parent = atrest.mounts_parent(ctx.data_dir, unprivileged_user("postgres"),
                                          data_dir_given=ctx.data_dir_given)
            check_free_space(parent or Path(tempfile.gettempdir()), atrest.disk_needed(ctx.size_bytes, len(at_rest)),
                             what=f"--size {fmt_bytes(ctx.size_bytes)} ({len(at_rest)} cluster"
                                  f"{'s' if len(at_rest) > 1 else ''}, one per encryption value)",
                             hint="free some space, give another --data-dir, or a smaller --size")
        facts = self._oltp_facts(ctx, oltp_runs, private=bool(oltp_private)) if oltp_runs else None
        if others:
            setup = self._prepare_server(ctx, others, oltp_facts=facts)
        else:
            setup = {"managed": True, "reconfigure": False, "schema": f"encbench_{secrets.token_hex(4)}",
                     "wait_interval_s": float(ctx.options.get("wait_interval") or DEFAULT_INTERVAL_S),
                     "versions": {}}
            self._servers[setup["schema"]] = None
        if facts is not None:
            setup.setdefault("oltp", facts)
        try:
            if oltp_private:
                self._prepare_oltp_server(ctx, setup)
            if at_rest:
                self._prepare_at_rest(ctx, setup, at_rest, parent)
        except BaseException:
            with interrupts.deferred():
                self.cleanup(setup)
            raise
        return setup

    # -- the oltp workload's servers (oltp.py) ------------------------------------------------------------
    def _oltp_facts(self, ctx: PrepareContext, variants: list, *, private: bool) -> dict:
        """pgbench found (exit 10 otherwise), the scale from --size, and whether the OS page cache can be held
        (said once when it cannot)."""
        try:  # a private server's own binaries first (ENCBENCH_PG_BINDIR, pg_config), as the server it drives
            bindir = None if ctx.options.get("dsn") else pg_server.find_bindir()
        except EngineUnavailableError:
            bindir = None
        tool = pgbench.find(None, bindir)
        if not tool:
            raise EngineUnavailableError("pgbench not found (the oltp workload drives pgbench)", hint=oltp.INSTALL_HINT)
        facts = {"pgbench": tool, "pgbench_version": pgbench.version(tool), "scale": oltp.scale_for(ctx.size_bytes),
                 "servers": {}}
        if private or any("encryption" in v for v in variants):
            why = memcg.unavailable()
            if why:
                facts["os_cache_not_held"] = why
                external.note(f"oltp: the OS page cache is not held to the memory share ({why}): only shared_buffers is "
                      "sized; the page reads per transaction say what the share really was")
        return facts

    def _memory_group(self, setup: dict, tag: str) -> memcg.Group | None:
        """A memory cgroup for a server about to start (its user may join it), or None where there is none."""
        if setup["oltp"].get("os_cache_not_held"):
            return None
        group = memcg.create(tag)
        self._groups.setdefault(setup["schema"], []).append(group)
        user = unprivileged_user("postgres")
        if user:
            group.allow(user[1], user[2])
        return group

    def _load_oltp(self, ctx: PrepareContext, setup: dict, conninfo: dict, where: str) -> dict:
        scale = setup["oltp"]["scale"]
        ctx.progress(f"oltp: pgbench -i -s {scale} ({where})")
        load_s = pgbench.initialize(setup["oltp"]["pgbench"], scale=scale, conninfo=conninfo, schema=setup["schema"],
                                    cwd=ctx.scratch_dir)
        admin = connect_admin(client.psycopg(), conninfo)
        try:
            size = oltp.data_bytes(admin, setup["schema"])
        finally:
            admin.close()
        return {"load_s": load_s, "data_bytes": size}

    def _prepare_oltp_server(self, ctx: PrepareContext, setup: dict) -> None:
        """The oltp workload's own private server (TLS on, stock settings: oltp.SERVER_SETTINGS), in a memory cgroup."""
        oltp.check_disk(Path(tempfile.gettempdir()), setup["oltp"]["scale"], _size_text(ctx.size_bytes))
        ctx.progress("oltp: starting a private PostgreSQL server")
        group = self._memory_group(setup, "pg-oltp")
        server = pg_server.start(settings=oltp.SERVER_SETTINGS, cgroup=group.path if group else None)
        self._oltp_servers[setup["schema"]] = server
        admin = connect_admin(client.psycopg(), server.conninfo())
        try:
            admin.execute(f"CREATE SCHEMA {setup['schema']}")
            version = admin.execute("SHOW server_version").fetchone()[0]
        finally:
            admin.close()
        setup["oltp"]["servers"]["tls"] = {"datadir": str(server.datadir), "port": server.port,
                                           "cgroup": str(group.path) if group else None,
                                           **self._load_oltp(ctx, setup, server.conninfo(), "its private server")}
        setup["_oltp_access"] = {"conninfo": server.conninfo(), "handle": server.worker_handle()}
        setup["versions"]["postgresql_server"] = version

    def _prepare_at_rest(self, ctx: PrepareContext, setup: dict, filesystems: dict, parent: Path | None) -> None:
        """One cluster per encryption value and filesystem options (atrest.cluster_key -> (value, options)), its data
        directory on a new filesystem of that kind made with those options, the same rows; the filesystems made in
        `parent`, else in a directory of their own in the temporary directory."""
        psycopg = client.psycopg()
        held = self._clusters.setdefault(setup["schema"], [])
        if parent is None:
            parent = self._workdirs[setup["schema"]] = encfs.workdir(atrest.WORKDIR_PREFIX)
        setup["mounts_parent"] = str(parent)
        rows = datagen.row_count_for(ctx.size_bytes)
        setup.update(rows=rows, seed=ctx.seed, generator_version=datagen.GENERATOR_VERSION,
                     page_size=atrest.BLOCK_SIZE, clusters={}, _cluster_access={})
        basebackup = pg_server.find_bindir() / "pg_basebackup"
        setup["pg_basebackup"] = str(basebackup) if os.access(basebackup, os.X_OK) else None
        with_oltp = any("encryption" in v and "script" in v for v in ctx.variants)
        with_table = any("encryption" in v and "script" not in v for v in ctx.variants)  # the at-rest workloads'
        for key, (enc, options) in filesystems.items():
            kind = atrest.ENCRYPTION_KINDS[enc]
            name = atrest.cluster_label(key, {"encryption": enc, "options": options})
            ctx.progress(f"{name}: making a {kind} filesystem and a cluster on it"
                         + (f" ({rows:,} rows)" if with_table else ""))
            mount = atrest.make_mount(enc, ctx.size_bytes, parent, options)
            entry = [None, mount]
            held.append(entry)
            group = self._memory_group(setup, f"pg-{key}") if with_oltp else None
            server = pg_server.start(settings=atrest.SERVER_SETTINGS, data_parent=mount.path,
                                     root_parent=mount.workdir, unix_socket=False,  # all of it goes with the mount
                                     cgroup=group.path if group else None)
            entry[0] = server
            daemon = atrest.daemon_pid(mount)
            if group is not None and daemon:  # what it reads of the cipher files is the server's page cache too
                group.add(daemon)
            marker = f"encbench marker {key} {secrets.token_hex(8)}"
            admin = connect_admin(psycopg, server.conninfo())
            try:
                if with_table:
                    load_s = atrest.load_table(admin, setup["schema"], rows, ctx.seed, marker)
                else:
                    load_s = None
                    admin.execute(f"CREATE SCHEMA {setup['schema']}")
                version = admin.execute("SHOW server_version").fetchone()[0]
            finally:
                admin.close()
            setup["clusters"][key] = {
                **mount.describe(), "datadir": str(server.datadir), "device": atrest.loop_device(mount.image),
                "daemon_pid": daemon, "marker": marker, "load_s": load_s,
                "server_log_outside_mount": str(server.logfile), "cipher": encfs.cipher_info(mount),
                **({"encryption": enc, "options": options} if key != enc else {})}
            setup["_cluster_access"][key] = {"conninfo": server.conninfo(), "handle": server.worker_handle(),
                                             "place": {**mount.describe(), "workdir": str(mount.workdir)}}
            setup["versions"]["postgresql_server"] = version
            if with_oltp:
                setup["oltp"]["servers"][key] = {"datadir": str(server.datadir),
                                                 "cgroup": str(group.path) if group else None,
                                                 **self._load_oltp(ctx, setup, server.conninfo(), name)}
        setup["cipher_notes"] = atrest.cipher_lines(setup["clusters"])
        if any("gocryptfs_cipher" in v for v in ctx.variants):  # the ciphers' own speeds here (advise's explanation)
            ctx.progress("gocryptfs -speed (each cipher's speed on this CPU)")
            setup["gocryptfs_speed"] = encfs.gocryptfs.speed()

    def _prepare_server(self, ctx: PrepareContext, variants: list, oltp_facts: dict | None = None) -> dict:
        """The in-transit and in-query workloads' server: the private one, or --dsn (where oltp runs too)."""
        psycopg = client.psycopg()
        dsn = ctx.options.get("dsn")
        server, conninfo, managed, reconfigure = _start_or_reach(ctx, psycopg)
        setup: dict[str, Any] = {"managed": managed, "reconfigure": reconfigure, "_conninfo": conninfo,
                                 "schema": f"encbench_{secrets.token_hex(4)}",
                                 "wait_interval_s": float(ctx.options.get("wait_interval") or DEFAULT_INTERVAL_S)}
        if server is not None and server.meter_dir is not None:  # --meter instructions (meter.py)
            setup["meter"] = {"dir": str(server.meter_dir), "marker": pg_meter.MARKER_SQL}
        self._servers[setup["schema"]] = server
        try:
            admin = connect_admin(psycopg, conninfo)
            journal = external.open_journal(psycopg, admin, conninfo, managed=managed, reconfigure=reconfigure)  # restores first
            setup["_journal"] = journal
            setup["server"] = external.server_facts(admin)
            if setup["server"]["ssl"] != "on" and any(v.get("tls", "off") != "off" for v in variants):
                raise EngineUnavailableError("the server has TLS off (ssl=off): TLS variants cannot run",
                                             hint="enable ssl on the server, or run with --variant tls=off")
            not_taken = external.privilege_notes(admin, setup)
            names = external.settings_changed(admin, setup, variants)  # the ssl settings, and the curve's when named
            if reconfigure and not managed:
                reconfigure = setup["reconfigure"] = external.may_reconfigure(admin, setup, names, not_taken)
            if reconfigure:  # what must be restored, written down before anything changes
                journal.data["settings"] = pg_state.snapshot(admin, names)
            setup["not_taken"] = not_taken
            if oltp_facts is not None:
                setup["oltp"] = oltp_facts
            for line in not_taken:
                external.note(line)
            setup["_applied"] = {k: None for k in names}  # None: as found
            journal.data["schema"] = setup["schema"]
            journal.save()
            ctx.progress("creating the benchmark tables")
            blocker = None if managed else pg_state.create_blocker(admin)
            if blocker:  # encbench's tables live in a schema of its own, dropped after the run
                raise EngineUnavailableError(f"cannot create encbench's schema for its tables: {blocker.reason}",
                                             hint=f"enable with: {blocker.grant}; or use a --dsn role that may")
            pg_objects.create_objects(admin, setup["schema"], ctx.params.get("bulk", {}).get("rows", 0))
            # --allow-reconfigure is the user's leave to create pgcrypto, whether or not the ssl settings may change
            may_create = managed or bool(ctx.options.get("allow_reconfigure"))
            pg_column.prepare(admin, setup, ctx, may_create=may_create, journal=journal)
            hashing = [v for v in variants if "function" in v]  # the hash workload (a column sweep has sessions only)
            if hashing:
                pg_objects.prepare_hash(admin, setup, ctx, hashing, journal, may_create=may_create)
            admin.close()
            if any("script" in v for v in variants):  # oltp on the --dsn server: pgbench's tables in our schema
                setup["oltp"]["servers"]["dsn"] = self._load_oltp(ctx, setup, conninfo, "the --dsn server")
            setup["pgbench"] = pgbench.find(server)
            setup["versions"] = {"postgresql_server": setup["server"]["version"]}
            setup["dsn"] = redact(dsn) if dsn else None
            if server is not None and server.keep:
                setup["kept_server"] = server.how_to_connect()
        except BaseException:
            with interrupts.deferred():  # a second signal must not cut the restore short
                self.cleanup(setup)
            raise
        return setup

    def apply_variant(self, setup: dict, variant: Variant, workload: str = "") -> dict:
        """Managed or --allow-reconfigure: the server offers only the suite too (client forces it anyway). oltp on
        a private server: shared_buffers for the memory share (and the forced suite: -c settings), a restart when
        they change; an at-rest cluster oltp changed gets its own settings back for the other workloads."""
        if "encryption" in variant:  # at rest: the variant's own cluster
            return self._hold_memory(setup, atrest.cluster_key(variant), variant if workload == OLTP else None)
        if workload == OLTP and setup.get("_oltp_access"):
            return self._hold_memory(setup, "tls", variant)
        tls = variant.get("tls", "off")
        if not setup["reconfigure"]:
            return {"server_side": "unchanged (the client offers only the variant's suite)"}
        forced = server_settings(tls) or {}
        target = {k: forced.get(k) for k in SSL_SETTINGS}  # None: as found
        curve_setting = setup.get("ecdh_setting")
        if curve_setting:  # the variant's curve; as found when it names none, or the one the server has
            curve = variant.get("ecdh_curve")
            found = setup["_journal"].data["settings"][curve_setting]["effective"]
            target[curve_setting] = None if curve in (None, found) else curve
        if target != setup["_applied"]:
            external.change_ssl_settings(setup, target)
        return external.running_values(setup, target)

    def _hold_memory(self, setup: dict, where: str, variant: Variant | None) -> dict:
        """The server of `where` ("tls": oltp's private one; else an at-rest cluster) set for this run: for oltp
        (variant) shared_buffers for its memory share of pgbench's data as -i made it (and on "tls" the forced
        suite's ssl settings); for another workload (None) the cluster's own settings. Restarted when they
        differ from the running ones; its memory cgroup unlimited (the oltp warm-up limits it)."""
        schema = setup["schema"]
        if where == "tls":
            server, access = self._oltp_servers.get(schema), setup["_oltp_access"]
        else:
            found = dict(zip(setup.get("clusters") or {}, self._clusters.get(schema, [])))
            server, access = (found.get(where) or [None])[0], setup["_cluster_access"][where]
        facts = ((setup.get("oltp") or {}).get("servers") or {}).get(where)
        if server is None or facts is None:  # a cluster the oltp workload does not use: nothing to change
            return {}
        if variant is None:
            want: dict[str, str | None] = {"shared_buffers": pg_server.SERVER_SETTINGS["shared_buffers"]}
        else:  # sized on the data as pgbench -i made it (what the runs add fits in memory=100%'s headroom)
            pool = oltp.pool_bytes(oltp.share_of(variant["memory"]), facts["data_bytes"])
            want = {"shared_buffers": f"{pool // 1024}kB"}
            if where == "tls":
                forced = server_settings(variant.get("tls", "off")) or {}
                want.update({k: forced.get(k) for k in SSL_SETTINGS})
        changed = any(pg_server.setting_of(server.args, k) != v for k, v in want.items())
        if changed:
            server.restart_with(want)
            access["handle"]["args"] = list(server.args)  # a worker's restart (cache=cold) keeps them
        if facts.get("cgroup"):
            memcg.Group(Path(facts["cgroup"])).set_limit(None)
        return {**{k: v for k, v in want.items() if v is not None}, "restarted": int(changed)}

    def cleanup(self, setup: dict) -> None:
        """Called once, whatever happened (inside interrupts.deferred): the at-rest clusters stopped and their
        filesystems destroyed (mount, loop device, key, image); oltp's server stopped; the memory cgroups they ran
        in removed (after them); an external server as it was found."""
        problems = []
        for server, mount in reversed(self._clusters.pop(setup.get("schema"), [])):
            if server is not None:
                server.stop()
            try:
                mount.destroy()
            except EncbenchError as e:
                problems.append(e)
        oltp_server = self._oltp_servers.pop(setup.get("schema"), None)
        if oltp_server is not None:
            oltp_server.stop()
        for group in self._groups.pop(setup.get("schema"), []):
            for line in group.destroy():
                problems.append(EngineUnavailableError(f"memory cgroup not removed: {line}",
                                                       hint="run `encbench cleanup` once nothing runs in it"))
        workdir = self._workdirs.pop(setup.get("schema"), None)
        if workdir is not None and not problems:  # a mount not destroyed keeps its directory (encbench cleanup)
            try:
                encfs.remove_workdir(workdir)
            except OSError as e:
                problems.append(FilesystemUnavailableError(f"{workdir}: {e.strerror}",
                                                            hint="run `encbench cleanup` once nothing uses it"))
        try:
            self._cleanup_server(setup)
        finally:
            if problems:
                raise problems[0]

    def failure_detail(self, setup: dict, keep_dir: Path) -> list[dict]:
        """The private servers of this run that died (PgServer.death_report): the in-transit one, each cluster."""
        schema = setup.get("schema")
        servers = [("private server", self._servers.get(schema)), ("oltp server", self._oltp_servers.get(schema))]
        clusters = setup.get("clusters") or {}
        servers += [(atrest.cluster_label(key, clusters[key]), server)
                    for key, (server, _) in zip(clusters, self._clusters.get(schema, []))]
        out = []
        for name, server in servers:
            try:
                report = server.death_report(keep_dir) if server is not None else None
            except Exception:  # never in the way of the error being reported
                report = None
            if report:
                out.append({"server": name, **report})
        return out

    def _cleanup_server(self, setup: dict) -> None:
        server = self._servers.pop(setup.get("schema"), None)
        if server is not None:
            if server.keep:
                return  # --keep: the server and its tables stay for inspection
            server.stop()  # a private server: deleted with everything in it
            return
        journal = setup.get("_journal")
        if journal is not None and "_conninfo" in setup:
            external.restore(client.psycopg(), setup["_conninfo"], journal)

    def calibrate(self, setup: dict) -> dict:
        functions = setup.get("hash_functions") or []
        out = {"raw_hash": {f: rawhash.raw_hash(f) for f in functions}} if functions else {}
        out.update(column_base.raw_reference(setup))
        encrypted = [c for c in (setup.get("clusters") or {}).values() if c["cipher"].get("encrypted")]
        if encrypted:  # the userspace figure of fscrypt's mode, beside the kernel driver the clusters name
            out["raw_cipher"] = {str(atrest.BLOCK_SIZE): atrest.raw_xts(atrest.BLOCK_SIZE)}
        return out

    def open_session(self, setup: dict, variant: Variant, *, mutable: bool, scratch_dir: Path) -> Session:
        return PgSession(setup, variant, scratch_dir, mutable=mutable)

    # -- encbench advise (issue 24): knobs.py ---------------------------------------------------------------------
    knobs = pg_knobs.KNOBS
    calibration_variants = ("script=select-only,tpcb-like", "memory=100%,25%", "encryption=off,fscrypt")  # root
    # the bill's terms that never apply to PostgreSQL, and those calibrate's mixes do not fit (with the run that would)
    calibration_absent = {"tls_resumptions": client.NO_RESUMPTION, "commits": COMMITS_AS_LOG}
    calibration_not_fitted = {"temp_bytes": "no calibrated mix spills to temporary files; what would measure it: "
                                            "encbench run --engine postgres --workload sort --variant "
                                            "encryption=off,fscrypt (a per-byte cost is not derived from it yet)"}
    calibration_transit_variants = ("tls=off,on", "clients=1")  # connect, bulk, roundtrip, storm: TLS off and on

    def advise_sweeps(self, quick: bool, options: dict) -> list:
        """The suites; the key exchange group where the server may be reconfigured (the private server, or --dsn
        with --allow-reconfigure) and its version has more than one; a connection per transaction or reused; the
        at-rest ciphers where the filesystems can be made here (root; not --dsn) and offer more than one. What is
        left out is said in one line each (stderr), the rest goes on."""
        dsn = options.get("dsn")
        notes = []
        curves = None
        if dsn and not options.get("allow_reconfigure"):
            notes.append("ecdh_curve not swept: it is the server's setting (ssl_ecdh_curve), changed on --dsn only "
                         "with --allow-reconfigure")
        else:
            version_num, version = self._server_version(dsn)
            curves = []
            for curve in pg_knobs.SWEEP_CURVES:
                why = pg_knobs.curve_unavailable(curve, version_num, version)
                if why:
                    notes.append(f"ecdh_curve={curve}: {why}")
                else:
                    curves.append(curve)
        at_rest = atrest.sweep_values(bool(dsn), notes)
        for line in notes:
            print(f"advise: {line}", file=sys.stderr)
        return pg_knobs.sweeps(quick, curves=tuple(curves) if curves else None, dsn=bool(dsn),
                            gocryptfs=at_rest.get("gocryptfs_cipher"), fscrypt=at_rest.get("fscrypt_policy"))

    @staticmethod
    def _server_version(dsn: str | None) -> tuple[int, str]:
        """(server_version_num, server_version) of the --dsn server, or of the private server's binaries."""
        if dsn:
            psycopg = client.psycopg()
            admin = connect_admin(psycopg, external.parse_dsn(psycopg, dsn))
            try:
                return admin.info.server_version, admin.execute("SHOW server_version").fetchone()[0]
            finally:
                admin.close()
        return pg_server.binary_version()

    def leak_check(self, options: dict, workdir: Path):
        """Community PostgreSQL has no encryption at rest: say so, and show where the canary lands. With
        --setting encryption=KIND: on a filesystem of that kind (atrest.leak_check)."""
        from . import leakcheck as existing

        return existing.canary_check(options, workdir)

    def posture(self, dsn: str):
        """leak-check --posture: no TDE; the filesystem under each place the server writes (leakcheck.py)."""
        from . import leakcheck as existing

        return existing.posture(external.parse_dsn(client.psycopg(), dsn))


def _start_or_reach(ctx: PrepareContext, psycopg) -> tuple:
    """The in-transit server: (the private one started, or None for --dsn; its conninfo; managed; reconfigure)."""
    dsn = ctx.options.get("dsn")
    if dsn and ctx.options.get("keep"):
        raise UsageError("--keep applies to the private server; with --dsn nothing is started",
                         hint="drop --keep, or drop --dsn to let encbench start a server")
    if dsn:
        return None, external.parse_dsn(psycopg, dsn), False, bool(ctx.options.get("allow_reconfigure"))
    ctx.progress("starting a private PostgreSQL server")
    server = pg_server.start(keep=bool(ctx.options.get("keep")), meter=ctx.meter or None)
    return server, server.conninfo(), True, True


def _size_text(size_bytes: int) -> str:
    return fmt_bytes(size_bytes).replace(" ", "")


