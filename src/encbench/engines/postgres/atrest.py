"""PostgreSQL at rest: one private cluster per `encryption` value, its files on a filesystem of that kind.

Community PostgreSQL has no transparent data encryption; teams that must encrypt it at rest put its
data directory on an encrypted filesystem. `encryption=off` is the same loop-mounted ext4 image
without encryption (host/encfs kind `plain`), so the comparison isolates encryption; `fscrypt`
(kernel, AES-256-XTS) and `gocryptfs` (FUSE, userspace AES-256-GCM) sit on the same image.

What lives where: the data directory (tables, WAL, pgsql_tmp temporary files) on the mount; the
server's log, certificate and password file in a directory beside the mount (in the filesystem's
working directory, so a killed run's are removed with it; on the host filesystem, unencrypted: a
leak the leak-check names); no Unix socket (TCP on 127.0.0.1 only). Each cluster holds the same
rows as SQLite and MariaDB (vocab/datagen.py, loaded by COPY) plus one marker row only its
backups contain.

cache=cold (session.set_cache): the server restarted (empty shared_buffers) and the OS page cache
of every file the server reads dropped: posix_fadvise(DONTNEED) per file of the data directory, of
gocryptfs's cipher directory and of the ext4 image below both (the loop device reads the image
through the host's page cache), after a syncfs of each filesystem involved. Per file, not
`echo 3 > drop_caches`: the machine is shared and a global drop would disturb everything else
running. Proven per operation (check_operation): cold, the table's blocks were read from outside
shared_buffers with read time (pg_statio_all_tables, blk_read_time) and the loop device under the
mount was read (/sys/block/loopN/stat); warm, the table was resident (pg_buffercache) and
blk_read_time did not move.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from ...errors import (BadValueError, CheckFailedError, EncryptionRefusedError, FilesystemUnavailableError,
                       UsageError)
from ...host import encfs, oscache
from ...vocab import datagen
from ...host import rawcipher
from ...host.encfs import cipherinfo
from ...vocab import leakcheck
from ...util import interrupts

AT_REST = ("scan-like", "scan-eq", "dml", "rebuild", "backup")
CACHED = ("scan-like", "scan-eq", "dml", "rebuild")
ENCRYPTION_KINDS = {"off": "plain", "fscrypt": "fscrypt", "gocryptfs": "gocryptfs"}  # variant value -> encfs kind
# the filesystem's own options, each a variant key applied when the filesystem is made (issue 24): key ->
# (the encryption value it applies to, the host/encfs option of that kind)
FS_KEYS = {"fscrypt_policy": ("fscrypt", "policy"), "gocryptfs_cipher": ("gocryptfs", "cipher")}
BLOCK_SIZE = 8192
# a cluster on a small image: WAL kept small (the image is sparse, but a 1 GB max_wal_size would fill it);
# durability on (the writes go through the filesystem's encryption), base backups possible
SERVER_SETTINGS = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on", "max_wal_size": "96MB",
                   "min_wal_size": "32MB", "wal_level": "replica", "max_wal_senders": "4",
                   "track_io_timing": "on"}  # blk_read_time: only real reads (PG15's blks_read counts extensions)
IMAGE_BASE = 1 << 30  # initdb, catalogs, and WAL: up to ~3x max_wal_size between checkpoints (sparse: costs nothing unused)
IMAGE_PER_BYTE = 16  # the table and its index, dml copies, VACUUM FULL's second copy, REINDEX


# what one cluster really writes into its image: initdb's catalogs (~40 MB), WAL up to max_wal_size and the
# recycled segments beside it, and the data twice (table and index, a workload's copies of them)
CLUSTER_WRITTEN_BASE = 200 << 20
CLUSTER_WRITTEN_PER_BYTE = 2


def image_size(size_bytes: int) -> int:
    return IMAGE_BASE + IMAGE_PER_BYTE * int(size_bytes)


def disk_needed(size_bytes: int, clusters: int) -> int:
    """The free space `clusters` clusters of --size `size_bytes` write into their (sparse) images."""
    return int(clusters) * (CLUSTER_WRITTEN_BASE + CLUSTER_WRITTEN_PER_BYTE * int(size_bytes))


def check_no_dsn(dsn: str | None, variants: list[dict]) -> None:
    if dsn and any("encryption" in v for v in variants):
        raise UsageError("--variant encryption=... moves the server's files onto a filesystem encbench makes: "
                         "only on the private server, never an external one (--dsn)",
                         hint="drop --dsn, or leave out the at-rest workloads (--workload storm,bulk,...)")


WORKDIR_PREFIX = "encbench-pg-fs-"  # the run's filesystems' own directory when the data directory will not do
DATA_DIR_HINT = "use a --data-dir whose every parent directory others may search (e.g. mkdir -m 755 /var/tmp/encbench)"
TMPDIR_HINT = "set TMPDIR to a directory whose every parent directory others may search, or give such a --data-dir"


def blocker(directory: Path, user: tuple[str, int, int] | None) -> str | None:
    """The server runs as `user` (postgres when we are root): every directory down to its data directory
    must be searchable by it, or initdb fails. What stops it (the first directory it cannot search), or None."""
    import stat

    if user is None:
        return None
    name, uid, gid = user
    d = Path(directory).resolve()
    for part in [*reversed(d.parents), d]:
        try:
            st = part.stat()
        except OSError:
            continue  # made later (under a directory checked here)
        bit = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid == gid else stat.S_IXOTH
        if not st.st_mode & bit:
            return f"the server runs as user {name} and cannot reach {directory}: {part} is mode {stat.S_IMODE(st.st_mode):o}"
    return None


def check_reachable(directory: Path, user: tuple[str, int, int] | None, hint: str = DATA_DIR_HINT) -> None:
    """BadValueError naming the first directory on the way to `directory` that `user` cannot search."""
    problem = blocker(directory, user)
    if problem:
        raise BadValueError(problem, hint=hint)


def mounts_parent(data_dir: Path, user: tuple[str, int, int] | None, *, data_dir_given: bool) -> Path | None:
    """Where the run's filesystems are made: in the data directory when the server's user can reach it (images
    on the disk the user chose). The default data directory it cannot reach (as root: under /root, mode 700)
    gives None: a directory of their own in the temporary directory (encfs.workdir), checked here. A --data-dir
    it cannot reach is refused (BadValueError): the user named that place."""
    if data_dir_given or blocker(data_dir, user) is None:
        check_reachable(data_dir, user)
        return Path(data_dir)
    check_reachable(Path(tempfile.gettempdir()), user, hint=TMPDIR_HINT)
    return None


def check_no_keep(keep: bool, variants: list[dict]) -> None:
    if keep and any("encryption" in v for v in variants):
        raise UsageError("--keep would leave encrypted mounts and their keys behind; the at-rest clusters are "
                         "always removed", hint="drop --keep (or run only the in-transit workloads with it)")


# -- the table ------------------------------------------------------------------------------

DDL = ("(id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, k bigint NOT NULL, grp int NOT NULL, "
       "name text NOT NULL, body text NOT NULL)")


def load_table(conn, schema: str, rows: int, seed: int, marker: str) -> float:
    """CREATE the table, COPY the generated rows and one marker row (id rows+1) in, index, ANALYZE; seconds."""
    t0 = time.perf_counter()
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"CREATE TABLE {schema}.data {DDL}")
    with conn.cursor().copy(f"COPY {schema}.data (id, k, grp, name, body) FROM STDIN") as copy:
        for row in datagen.rows(rows, seed):
            copy.write_row(row)
        copy.write_row((rows + 1, 0, 0, "marker", marker))
    conn.execute(f"ALTER TABLE {schema}.data ALTER id RESTART WITH {rows + 2}")
    conn.execute(f"CREATE INDEX data_grp ON {schema}.data (grp)")
    conn.execute(f"ANALYZE {schema}.data")
    conn.execute("CHECKPOINT")
    return time.perf_counter() - t0


def copy_table(conn, schema: str, source: str, dest: str, rows: int) -> None:
    """A per-run copy (dml, rebuild): same columns, indexes and identity position."""
    conn.execute(f"CREATE TABLE {schema}.{dest} (LIKE {schema}.{source} INCLUDING ALL)")
    conn.execute(f"INSERT INTO {schema}.{dest} SELECT * FROM {schema}.{source}")
    conn.execute(f"ALTER TABLE {schema}.{dest} ALTER id RESTART WITH {rows + 2}")
    conn.execute(f"ANALYZE {schema}.{dest}")


# -- the OS page cache and the block device under the mount ------------------------------------

def loop_device(image: str | os.PathLike) -> str | None:
    """The loop device (e.g. loop3) whose backing file is `image`."""
    want = str(Path(image).resolve())
    for bf in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            if bf.read_text().strip() == want:
                return bf.parent.parent.name
        except OSError:
            continue
    return None


def device_read_bytes(device: str | None) -> int | None:
    """Bytes read from a block device so far (/sys/block/DEV/stat: sectors read x 512)."""
    if not device:
        return None
    try:
        return int(Path(f"/sys/block/{device}/stat").read_text().split()[2]) * 512
    except (OSError, IndexError, ValueError):
        return None


def _syncfs(path: Path) -> bool:
    """syncfs(2) of the filesystem holding `path`: its dirty pages written (not the whole machine's, as sync)."""
    import ctypes

    try:
        fd = os.open(path if path.is_dir() else path.parent, os.O_RDONLY)
    except OSError:
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs(fd) == 0
    finally:
        os.close(fd)


def drop_os_cache(paths: list[str]) -> dict:
    """syncfs of each filesystem involved (the mount, gocryptfs's lower ext4, the host filesystem holding the
    image: top down, so what the upper one writes back lands before the lower one is synced), then
    posix_fadvise(DONTNEED) of every regular file under `paths` (directories or files)."""
    paths = [Path(p) for p in paths]
    for p in paths:
        _syncfs(p)
    files = dropped = 0
    for p in paths:
        walk = [p] if p.is_file() else (q for q in p.rglob("*") if q.is_file() and not q.is_symlink())
        for f in walk:
            files += 1
            dropped += oscache.drop_file(f, sync=False)
    return {"files": files, "dropped": dropped}


def cache_paths(cluster: dict) -> list[str]:
    """What holds the server's data in the OS page cache: its files, gocryptfs's cipher files, the image."""
    out = [cluster["datadir"]]
    if cluster["backing_kind"] == "cipher-dir":
        out.append(cluster["backing"])
    out.append(cluster["image"])
    return out


# -- counters and the per-operation proof ---------------------------------------------------

def counters(conn, table: str, device: str | None) -> dict[str, int]:
    """Block reads of this table and of the database (the server's), bytes read from the loop device (the
    kernel's). pg_stat_force_next_flush() first: a backend's counts reach the shared statistics only when
    flushed (at most once a second otherwise)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    table_read, table_hit, db_read, read_ms = conn.execute(
        "SELECT coalesce(t.heap_blks_read, 0) + coalesce(t.idx_blks_read, 0) + coalesce(t.toast_blks_read, 0) "
        "+ coalesce(t.tidx_blks_read, 0), coalesce(t.heap_blks_hit, 0) + coalesce(t.idx_blks_hit, 0) "
        "+ coalesce(t.toast_blks_hit, 0) + coalesce(t.tidx_blks_hit, 0), d.blks_read, d.blk_read_time "
        "FROM pg_statio_all_tables t, pg_stat_database d "
        "WHERE t.relid = %s::regclass AND d.datname = current_database()", (table,)).fetchone()
    out = {"pages_read": int(table_read), "pages_hit": int(table_hit), "pool_misses": int(db_read),
           "read_time_us": int(round(read_ms * 1000))}
    dev = device_read_bytes(device)
    if dev is not None:
        out["device_read_bytes"] = dev
    return out


def check_operation(variant: dict, metrics: dict, cache: dict, *, rewrote: bool = False) -> dict | None:
    """cache=warm: every block of the table, its indexes and TOAST was in shared_buffers when the operation
    started (pg_buffercache, read in set_cache) and no block was read from outside them during it
    (blk_read_time did not move: PostgreSQL 15's blks_read also counts the blocks an operation adds to a
    relation, which reads nothing). A rewrite (VACUUM FULL) reads back the new file it wrote past
    shared_buffers: for it the first half only. cache=cold: the table's blocks were read, taking time, and
    the kernel read the device under the mount (the OS page cache was dropped). CheckFailedError otherwise."""
    state = cache.get("cache")
    if state is None or "read_time_us" not in metrics:
        return None
    device = metrics.get("device_read_bytes")
    if state == "warm" and cache.get("resident_blocks", 0) < cache.get("relation_blocks", 0):
        raise CheckFailedError(f"cache=warm but only {cache['resident_blocks']} of the table's "
                               f"{cache['relation_blocks']} blocks were in shared_buffers (pg_buffercache)",
                               hint="shared_buffers is too small for the table: use a smaller --size")
    if state == "warm" and metrics["read_time_us"] > 0 and not rewrote:
        raise CheckFailedError(f"cache=warm but blocks were read from outside shared_buffers during the "
                               f"operation ({metrics['read_time_us']:.0f} µs of reads, pg_stat_database."
                               f"blk_read_time; {device or 0:.0f} bytes from the device)",
                               hint="shared_buffers is too small for the table: use a smaller --size")
    if state == "cold":
        if metrics.get("pages_read", 0) <= 0 or metrics["read_time_us"] <= 0:
            raise CheckFailedError("cache=cold but none of the table's blocks was read from outside shared_buffers "
                                   "(pg_statio_all_tables, blk_read_time)")
        if device is not None and device <= 0:
            raise CheckFailedError("cache=cold but nothing was read from the device under the mount: the OS page "
                                   "cache still held the table (posix_fadvise did not evict it)")
    return {"cache_verified": 1}


# -- the raw cipher beside the per-page cost -----------------------------------------------

def raw_xts(page_size: int = BLOCK_SIZE, repeats: int | None = None) -> dict:
    """AES-256-XTS (fscrypt's contents mode) in userspace through `cryptography` (OpenSSL, AES-NI where the CPU
    has it): bulk 1 MiB calls into one buffer, repeated, geometric mean with a 95% t-interval (host/rawcipher's
    machinery). One call is one XTS data unit; fscrypt's are 4 KiB, which adds one AES block (the tweak) per
    256: within 0.4%."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


    key, tweak = os.urandom(64), os.urandom(16)
    big = os.urandom(rawcipher.BULK)
    out_buf = bytearray(rawcipher.BULK + 64)
    cipher = Cipher(algorithms.AES(key), modes.XTS(tweak))

    def fn():
        d = cipher.decryptor()
        d.update_into(big, out_buf)
        d.finalize()

    n = repeats or rawcipher.REPEATS
    s = rawcipher._summary(rawcipher._repeat(fn, rawcipher.BULK, n, rawcipher.SECONDS))
    out = {"cipher": f"AES-256-XTS per {page_size}-byte page (fscrypt's contents mode), userspace",
           "page_size": page_size, "payload_bytes": page_size, "library": rawcipher._cryptography_version(),
           "repeats": n, "per_page_cpu_s": page_size / s["value"] / 1e6, "mb_per_s_per_core": s["value"],
           "mb_per_s_ci": s["ci"], "mb_per_s_repeats": s["repeats"], "steal_max": s["steal_max"],
           "method": f"{n} repeats of >= {rawcipher.SECONDS:g} s CPU, bulk 1 MiB XTS calls into one preallocated "
                     "buffer through the cryptography package; geometric mean with a 95% t-interval on the log values"}
    kernel = kernel_xts(repeats=n)
    if kernel:
        out["kernel"] = kernel
    out["spread"] = rawcipher.spread_text(out)
    return out


def kernel_xts(repeats: int = 7, chunk: int = 64 << 10) -> dict | None:
    """The kernel's own xts(aes), the implementation fscrypt runs, timed through AF_ALG (the calling process's
    CPU: the work runs in its system calls): MB/s per core with a 95% CI, the driver /proc/crypto names."""
    import socket


    if not hasattr(socket, "AF_ALG"):
        return None
    try:
        alg = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)
        alg.bind(("skcipher", "xts(aes)"))
        alg.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, os.urandom(64))
    except OSError:
        return None
    data, iv = os.urandom(chunk), os.urandom(16)
    try:
        op, _ = alg.accept()
        with op:
            def fn():
                for _ in range(rawcipher.BULK // chunk):
                    op.sendmsg_afalg([data], op=socket.ALG_OP_DECRYPT, iv=iv)
                    op.recv(chunk)

            s = rawcipher._summary(rawcipher._repeat(fn, rawcipher.BULK, repeats, rawcipher.SECONDS))
    except OSError:
        return None
    finally:
        alg.close()
    driver = cipherinfo.kernel_cipher("xts(aes)")
    return {"mb_per_s_per_core": s["value"], "mb_per_s_ci": s["ci"], "mb_per_s_repeats": s["repeats"],
            "driver": driver.get("driver"), "accelerated": driver.get("accelerated"),
            "implementation": driver.get("implementation"),
            "method": f"AF_ALG skcipher xts(aes), {chunk >> 10} KiB per request, {repeats} repeats of >= "
                      f"{rawcipher.SECONDS:g} s CPU (system time of the caller), geometric mean, 95% t-interval"}


def describe_mount(mount, info: dict) -> dict:
    return {**mount.describe(), "cipher": info}


def cipher_lines(clusters: dict) -> list[str]:
    """One sentence per encrypted cluster: the cipher that runs (encfs.cipher_info's summary)."""
    return [f"{cluster_label(key, c)}: {c['cipher'].get('summary')}" for key, c in sorted(clusters.items())
            if c.get("cipher", {}).get("encrypted")]


def cluster_label(key: str, cluster: dict) -> str:
    """'encryption=gocryptfs,gocryptfs_cipher=xchacha' for a cluster (its key where it recorded nothing else)."""
    enc = cluster.get("encryption")
    if not enc:
        return f"encryption={key}"
    options = cluster.get("options") or {}
    return ",".join([f"encryption={enc}"] + [f"{k}={options[o]}" for k, (v, o) in FS_KEYS.items()
                                            if v == enc and o in options])


def daemon_pid(mount) -> int | None:
    """The gocryptfs daemon serving `mount` (it decrypts for the server: its CPU is the server side's), else None."""
    if mount.cipher_side != "userspace":
        return None
    import psutil

    point = str(mount.mount_point)
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info.get("name") == "gocryptfs" and point in (proc.info.get("cmdline") or []):
            return proc.pid
    return None


def make_mount(enc: str, size_bytes: int, workdir: Path, options: dict | None = None):
    return encfs.create(ENCRYPTION_KINDS[enc], image_size(size_bytes), workdir, options)


def sweep_blocker(kind: str, dsn: bool) -> str | None:
    """Why `encbench advise` cannot sweep a filesystem kind's options here (one line), or None."""
    if dsn:
        return "the at-rest clusters are private servers on filesystems encbench makes, never an external one (--dsn)"
    try:
        encfs.check(kind)
    except FilesystemUnavailableError as e:
        return e.one_line()
    return None


def check_options(enc: str, options: dict) -> None:
    """Before anything is made: a filesystem option this machine cannot run is refused in one line, naming the
    variant key (fscrypt's policy: the kernel; gocryptfs's cipher: its version)."""
    kind = ENCRYPTION_KINDS[enc]
    why = encfs.unavailable(kind, options)
    if why:
        key = fs_key_of(enc)
        value = options[FS_KEYS[key][1]]
        error = EncryptionRefusedError if kind == "fscrypt" else FilesystemUnavailableError
        raise error(f"--variant {key}={value}: {why}", hint=f"use {key}={encfs.OPTIONS[kind][FS_KEYS[key][1]][0]}")


def filesystem_of(variant: dict) -> tuple[str, dict]:
    """(encryption value, the host/encfs options of its filesystem that differ from the kind's defaults)."""
    enc = variant["encryption"]
    kind = ENCRYPTION_KINDS[enc]
    options = {}
    for key, (value, option) in FS_KEYS.items():
        if enc == value and key in variant and variant[key] != encfs.OPTIONS[kind][option][0]:
            options[option] = variant[key]
    return enc, options


def cluster_key(variant: dict) -> str:
    """The at-rest cluster a variant runs on: one per encryption value and filesystem options ("gocryptfs",
    "gocryptfs-xchacha"); a variant naming a kind's default option shares the cluster of the kind."""
    enc, options = filesystem_of(variant)
    return "-".join([enc, *options.values()])


def fs_key_of(enc: str) -> str | None:
    """The variant key of an encryption value's filesystem options (gocryptfs_cipher), if it has one."""
    return next((k for k, (value, _) in FS_KEYS.items() if value == enc), None)


def check_filesystem(variant: dict, cluster: dict, place: dict) -> dict:
    """The filesystem under a run's cluster read back (encfs.running_options: fscrypt status, gocryptfs -info)
    against the variant's option (its kind's default when it names none): CheckFailedError when it runs another."""
    enc = cluster.get("encryption") or variant["encryption"]
    kind = ENCRYPTION_KINDS[enc]
    key = fs_key_of(enc)
    if key is None:
        return {}
    option = FS_KEYS[key][1]
    got = encfs.running_options(kind, place)
    want = variant.get(key, encfs.OPTIONS[kind][option][0])
    if got.get(option) != want:
        shown = {k: v for k, v in got.items() if k not in (option, "read_from")}
        raise CheckFailedError(f"the {kind} filesystem under this run's cluster runs {shown} ({got.get('read_from')}),"
                               f" not {key}={want}", hint="it was made with other options: a bug, please report it")
    return got


# -- leak-check: the canary on an encrypted filesystem, and what still leaks outside it -----------

LEAK_IMAGE = 128 << 20
LEAK_FIXES = {
    "filesystem": "the data directory's filesystem holds it in plaintext: use encryption=fscrypt or gocryptfs",
    "server log": "the server log is outside the mount: set logging_collector=on and log_directory to a directory "
                  "on the encrypted mount (or log no statements: log_min_error_statement=panic)",
    "pg_dump": "a dump written outside the mount is plaintext: write it onto the encrypted mount, or encrypt the "
               "stream (pg_dump | age/gpg)",
    "base backup": "pg_basebackup reads through the mount, so its copy is plaintext wherever it lands: back up to "
                   "an encrypted filesystem or encrypt the stream (-D - -F t | age/gpg)",
}


def leak_check(settings: dict, workdir: Path):
    """`leak-check --engine postgres --setting encryption=KIND`: a private cluster on a new filesystem of that
    kind; a canary planted in a table, in an error the server logs, in a pg_dump and a base backup written
    outside the mount; the image (and gocryptfs's cipher dir) scanned after the server stopped."""
    import subprocess

    from . import server as pg_server
    from .client import connect_admin, psycopg

    unknown = sorted(set(settings) - {"encryption"})
    enc = settings.get("encryption")
    if unknown or enc not in ENCRYPTION_KINDS:
        raise UsageError(f"leak-check --engine postgres takes --setting encryption=KIND "
                         f"({'unknown ' + ', '.join(unknown) if unknown else f'got {enc!r}'})",
                         hint=f"KIND: {', '.join(ENCRYPTION_KINDS)}")
    encfs.check(ENCRYPTION_KINDS[enc])
    canary = leakcheck.new_canary()  # (workdir: the command's private temporary directory, made searchable)
    outside = workdir / "outside"  # the dump and the base backup: private to root
    outside.mkdir(mode=0o700)
    os.chmod(workdir, 0o711)  # the server (user postgres) traverses it to the mount; nothing can be listed
    mount = encfs.create(ENCRYPTION_KINDS[enc], LEAK_IMAGE, workdir)  # a cluster with one small table
    report = leakcheck.LeakReport("postgres", f"private PostgreSQL cluster, data directory (tables, WAL, temporary "
                                  f"files) on {mount.kind} ({ENCRYPTION_KINDS[enc]} kind of host/encfs)", len(canary))
    server = None
    try:
        server = pg_server.start(settings=SERVER_SETTINGS, data_parent=mount.path, root_parent=mount.workdir,
                                 unix_socket=False)
        conn = connect_admin(psycopg(), server.conninfo())
        try:
            conn.execute("CREATE TABLE leak (v text PRIMARY KEY)")
            conn.execute("INSERT INTO leak SELECT %s || ' ' || i FROM generate_series(1, 200) i", (canary,))
            try:  # an error carrying a value: the server logs it with its statement (default settings)
                conn.execute("INSERT INTO leak VALUES (%s)", (f"{canary} 1",))
            except psycopg().errors.UniqueViolation:
                pass
            conn.execute("CHECKPOINT")
        finally:
            conn.close()
        env = dict(os.environ, PGPASSWORD=server.password, PGSSLMODE="disable")
        where = ["-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres"]
        dump, backup = outside / "dump.sql", outside / "basebackup"
        for cmd in ([str(server.bindir / "pg_dump"), *where, "-d", "postgres", "-t", "leak", "-f", str(dump)],
                    [str(server.bindir / "pg_basebackup"), *where, "-D", str(backup), "-c", "fast", "--no-password"]):
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                report.notes.append(f"{Path(cmd[0]).name} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
        datadir = server.datadir
        control = sum(leakcheck.count_in_file(f, canary.encode()) for f in datadir.rglob("*") if f.is_file())
        report.control = {"configuration": "the same data directory read through the mount (decrypted)",
                          "found_in": [f"the data directory ({control} occurrences)"] if control else [],
                          "occurrences": control}
        with interrupts.deferred():
            pg_server.shutdown(datadir)  # everything written, the files closed
        os.sync()
        below = [leakcheck.ScanTarget(str(mount.image), f"{mount.kind}: the ext4 image under the mount",
                                      LEAK_FIXES["filesystem"])]
        if mount.backing_kind == "cipher-dir":
            below.insert(0, leakcheck.ScanTarget(str(mount.backing), "gocryptfs cipher directory",
                                                 LEAK_FIXES["filesystem"]))
        leakcheck.scan(below + [
            leakcheck.ScanTarget(str(server.root), "server log and files outside the mount", LEAK_FIXES["server log"]),
            leakcheck.ScanTarget(str(dump), "pg_dump output (outside the mount)", LEAK_FIXES["pg_dump"]),
            leakcheck.ScanTarget(str(backup), "base backup (outside the mount)", LEAK_FIXES["base backup"]),
        ], canary, report)
        report.notes.append(f"control: the canary is in the data directory {control} times when read through the "
                            "mount (the filesystem decrypts it); the scans above read what is at rest below it")
        report.notes.append("cipher: " + str(encfs.cipher_info(mount).get("summary") or "none (plain)"))
    finally:
        with interrupts.deferred():
            if server is not None:
                server.stop()
            mount.destroy()
    return report


def sweep_values(dsn: bool, notes: list[str]) -> dict[str, tuple | None]:
    """advise: each at-rest cipher knob's values that run here (FS_KEYS -> values; None: not swept), what is left
    out said in `notes` (one line each)."""
    at_rest: dict[str, tuple | None] = {}
    for key, (enc, option) in FS_KEYS.items():
        kind = ENCRYPTION_KINDS[enc]
        default, values = encfs.OPTIONS[kind][option]
        why_not = sweep_blocker(kind, dsn)
        if why_not:
            notes.append(f"{key} not swept: {why_not}")
            at_rest[key] = None
            continue
        missing = {v: encfs.unavailable(kind, {option: v}) for v in values if v != default}
        found = tuple(v for v in values if v == default or not missing[v])
        gone = "; ".join(f"{v} {why}" for v, why in missing.items() if why)
        if len(found) < 2:
            notes.append(f"{key}: not available: only {default} runs here ({gone})")
        elif gone:
            notes.append(f"{key}: {gone}")
        at_rest[key] = found
    return at_rest
