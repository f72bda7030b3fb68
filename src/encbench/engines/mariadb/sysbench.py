"""sysbench (Debian `sysbench`, 1.0.20 here) as the MariaDB oltp workload's driver (issue 22).

Its own OLTP scripts (oltp_read_only, oltp_read_write, oltp_point_select, oltp_write_only) run on tables it prepared
itself (`sysbench oltp_common prepare`), in a private directory of the worker (`Workdir`):

  sb.cfg        the password (--config-file, mode 0600): never on a command line
  table.lua     the prepare wrapper: sysbench 1.0.20 has no --create_table_options, but its
                oltp_common.lua appends the Lua global `mysql_table_options` to every CREATE TABLE
                (ENCRYPTED=YES ENCRYPTION_KEY_ID=1, or ENCRYPTED=NO)
  client-*.pem  sysbench 1.0.20's --mysql-ssl=on loads client-key.pem, client-cert.pem and cacert.pem
  cacert.pem    from its working directory: the client library verifies the server against cacert.pem
                (the private server's self-signed certificate) and presents the client certificate,
                which the server refuses unless it can verify it (the private server is started with
                that certificate as its ssl_ca: server.start(client_cert=True)). A --dsn server would
                have to trust a certificate of encbench's: oltp with TLS runs on the private server only.

Rows are drawn uniformly (--rand-type=uniform): every page is as likely as any other, so the share of the
data in memory sets the physical reads per transaction. (sysbench's default, `special`, sends 75% of the
reads to 1% of the rows: with 25% of the data in memory it read 0.1 pages per transaction here.)

The latency percentiles come from sysbench's own histogram (--histogram=on, every transaction counted in
its log-scale buckets): the smallest bucket whose running count reaches the share asked for, as sysbench
computes its own `95th percentile` line (kept beside it as `sysbench_p95_ms`).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import EngineUnavailableError, RunFailedError
from ...util.redact import redact
from ...util.proc import kill_and_reap
from ...vocab.tls import forced, openssl_client_conf

SCRIPTS = ("oltp_read_only", "oltp_read_write", "oltp_point_select", "oltp_write_only")
TABLES = 4  # sbtest1..4 per schema (the field notes' layout)
MIN_ROWS = 1_000  # per table: above the range queries' 100 rows
ROW_BYTES = 263  # InnoDB's data + index length per sysbench row (10.11: 4 tables x 48k rows = 50.5 MB)
RAND_TYPE = "uniform"
INSTALL_HINT = "install it with: apt-get install sysbench (scripts/setup.sh does)"
ENCRYPTED_OPTIONS = {"on": "ENCRYPTED=YES ENCRYPTION_KEY_ID=1", "off": "ENCRYPTED=NO"}
PERCENTILES = (50, 95, 99)

_TRANSACTIONS = re.compile(r"^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec", re.M)
_TOTAL_TIME = re.compile(r"^\s*total time:\s+([\d.]+)s", re.M)
_IGNORED = re.compile(r"^\s*ignored errors:\s+(\d+)", re.M)
_RECONNECTS = re.compile(r"^\s*reconnects:\s+(\d+)", re.M)
_OWN_P95 = re.compile(r"^\s*95th percentile:\s+([\d.]+)", re.M)
_BUCKET = re.compile(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$")


def binary() -> str:
    found = shutil.which("sysbench")
    if not found:
        raise EngineUnavailableError("sysbench not found (the MariaDB oltp workload drives it)", hint=INSTALL_HINT)
    return found


def version(tool: str) -> str:
    """'sysbench 1.0.20' as the tool says it."""
    done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)
    return (done.stdout.strip().splitlines() or ["sysbench ?"])[0].split(" (")[0]


def rows_per_table(size_bytes: int) -> int:
    """Rows per sbtest table for a data set of about size_bytes (InnoDB data + index) per schema."""
    return max(MIN_ROWS, math.ceil(size_bytes / (TABLES * ROW_BYTES)))


# -- the output ---------------------------------------------------------------------------

def histogram(out: str) -> list[tuple[float, int]]:
    """(bucket value in ms, count) of sysbench's latency histogram, in order."""
    lines = out.split("Latency histogram", 1)[1].splitlines()[2:] if "Latency histogram" in out else []
    got = []
    for line in lines:
        m = _BUCKET.match(line)
        if not m:
            break
        got.append((float(m.group(1)), int(m.group(2))))
    return got


def percentile(buckets: list[tuple[float, int]], q: float) -> float | None:
    """The smallest bucket value whose running count reaches q% of all, rounded to a whole count (sysbench's
    own rule for its `95th percentile` line)."""
    total = sum(n for _, n in buckets)
    if not total:
        return None
    need = math.floor(total * q / 100.0 + 0.5)
    seen = 0
    for value, n in buckets:
        seen += n
        if seen >= need:
            return value
    return buckets[-1][0]


def summary(out: str) -> dict:
    """Transactions, their rate and latency percentiles from a `sysbench ... run --histogram=on` report."""
    m = _TRANSACTIONS.search(out)
    if not m:
        raise RunFailedError("sysbench printed no transaction count", hint="run it by hand with the same options")
    txns = int(m.group(1))
    total = _TOTAL_TIME.search(out)
    seconds = float(total.group(1)) if total else None
    buckets = histogram(out)
    if txns and sum(n for _, n in buckets) != txns:
        raise RunFailedError(f"sysbench's latency histogram counts {sum(n for _, n in buckets)} transactions, "
                             f"its report {txns}", hint="a sysbench whose output encbench does not know")
    own = _OWN_P95.search(out)
    got = {"transactions": txns, "tps": txns / seconds if seconds else float(m.group(2)),
           **{f"latency_p{q}_ms": percentile(buckets, q) for q in PERCENTILES},
           "sysbench_tps": float(m.group(2)), "sysbench_seconds": seconds,
           "sysbench_p95_ms": float(own.group(1)) if own else None}
    for key, pattern in (("ignored_errors", _IGNORED), ("reconnects", _RECONNECTS)):
        found = pattern.search(out)
        if found:
            got[key] = int(found.group(1))
    return got


_CLIENT_ERROR = re.compile(r"error \d+:")


def last_error(err: str, out: str = "") -> str:
    """sysbench's own error line (redacted): the client library's ('FATAL: error 2026: TLS/SSL error: ...')
    when there is one, else its last FATAL line, else its last line."""
    lines = [x.strip() for x in (err + "\n" + out).splitlines() if x.strip()]
    fatal = [x for x in lines if x.startswith("FATAL")]
    coded = [x for x in fatal if _CLIENT_ERROR.search(x)]
    return redact((coded or fatal or lines or ["no output"])[-1])


# -- the working directory and the command lines ----------------------------------------

@dataclass
class Address:
    """Where sysbench connects: the private server's TCP address and user (or --dsn's)."""

    host: str
    port: int
    user: str
    password: str = field(default="", repr=False)
    socket: str | None = None


def _private_file(path: Path, text: str | bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)


class Workdir:
    """sysbench's working directory: its option file (the password), TLS files, the prepare wrapper."""

    def __init__(self, directory: Path, tool: str, target: Address, schema: str, tables: int, rows: int):
        self.dir, self.tool, self.target, self.schema = Path(directory), tool, target, schema
        self.tables, self.rows = tables, rows
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        self.config = self.dir / "sb.cfg"
        _private_file(self.config, f"mysql-password={target.password}\n")

    def with_tls(self, files: dict) -> None:
        """The files --mysql-ssl=on loads: {"cert", "key"}: the client's certificate and key, {"ca"}: the server's."""
        for name, key in (("client-cert.pem", "cert"), ("client-key.pem", "key"), ("cacert.pem", "ca")):
            _private_file(self.dir / name, Path(files[key]).read_bytes())

    def base(self, tls: str) -> list[str]:
        t = self.target
        where = [f"--mysql-socket={t.socket}"] if t.socket else [f"--mysql-host={t.host}", f"--mysql-port={t.port}"]
        return [self.tool, f"--config-file={self.config}", "--db-driver=mysql", *where, f"--mysql-user={t.user}",
                f"--mysql-db={self.schema}", *tls_args(tls), f"--tables={self.tables}", f"--table-size={self.rows}"]

    def prepare_command(self, encryption: str, threads: int) -> list[str]:
        wrapper = self.dir / f"table-{encryption}.lua"
        wrapper.write_text(f'mysql_table_options = "{ENCRYPTED_OPTIONS[encryption]}"\nrequire("oltp_common")\n')
        return [*self.base("off"), f"--threads={threads}", str(wrapper), "prepare"]

    def prewarm_command(self, script: str, tls: str, clients: int) -> list[str]:
        return [*self.base(tls), f"--threads={clients}", script, "prewarm"]

    def run_command(self, script: str, tls: str, clients: int, seconds: float) -> list[str]:
        return [*self.base(tls), f"--threads={clients}", f"--time={int(seconds)}", f"--rand-type={RAND_TYPE}",
                "--histogram=on", "--percentile=95", script, "run"]

    def start(self, cmd: list[str], tls: str = "off") -> subprocess.Popen:
        env = dict(os.environ)
        conf = openssl_conf(tls)
        if conf:  # the client library's OpenSSL reads it at start-up: the variant's protocol and suite only
            (self.dir / "openssl.cnf").write_text(conf)
            env["OPENSSL_CONF"] = str(self.dir / "openssl.cnf")
        return subprocess.Popen(cmd, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)

    def call(self, cmd: list[str], what: str, tls: str = "off", timeout: float | None = None) -> str:
        """Run to the end; its output, or RunFailedError with sysbench's own last error line."""
        proc = self.start(cmd, tls)
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            kill_and_reap(proc)
            raise
        if proc.returncode != 0:
            raise failure(what, err, out, proc.returncode)
        return out


def openssl_conf(tls: str) -> str | None:
    """For a forced variant (PROTOCOL:SUITE): an OpenSSL configuration offering that protocol and suite only
    (sysbench 1.0.20 has no option for the protocol); None otherwise."""
    conf, f = openssl_client_conf(tls), forced(tls)
    if not conf or not f:
        return None
    return conf + f"MinProtocol = {f[0]}\nMaxProtocol = {f[0]}\n"


def tls_args(tls: str) -> list[str]:
    """sysbench's TLS options for a variant: off, or on (with a TLS 1.2 suite named; the protocol and a TLS 1.3
    suite are pinned by its OPENSSL_CONF: openssl_conf)."""
    if tls == "off":
        return ["--mysql-ssl=off"]

    f = forced(tls)
    return ["--mysql-ssl=on", *([f"--mysql-ssl-cipher={f[1]}"] if f and f[0] != "TLSv1.3" else [])]


def described(cmd: list[str]) -> str:
    """The command as the result file keeps it: the program's name, no paths to private files, no password."""
    keep = [os.path.basename(cmd[0])] + [a for a in cmd[1:] if not a.startswith(("--config-file", "--mysql-socket"))]
    return redact(" ".join(os.path.basename(a) if a.endswith(".lua") else a for a in keep))


def failure(what: str, err: str, out: str = "", returncode: int | None = None) -> RunFailedError:
    said = f"killed by signal {-returncode}" if returncode is not None and returncode < 0 else last_error(err, out)
    return RunFailedError(f"sysbench failed ({what}): {said}",
                          hint="its own error line; the runs finished before are kept")

