"""The in-column lab (issue 16): what encrypting one column costs, and what it does to lookups.

A fresh table of N rows with one value column, on which four operations are timed apart:
insert (every value encrypted, then written), read (every row fetched, then decrypted),
lookup (point lookups by equality on the encrypted value) and update (every value replaced
by a new encrypted one). The variant key `method` says how the value is protected:

  none        plaintext, indexed: the baseline
  client-gcm  AES-256-GCM in the application, a random 96-bit nonce per value (randomized:
              equal values give different ciphertexts, so no index can serve an equality
              lookup: every row is fetched and decrypted)
  client-siv  AES-256-SIV in the application (RFC 5297, deterministic: equal values give
              equal ciphertexts, so the index on the ciphertext serves the lookup)

with the `cryptography` package (OpenSSL). An engine adds its own in-database methods
(pgcrypto, AES_ENCRYPT) by passing them to `method_key`: for those the workload sends
plaintext and the session's SQL encrypts and decrypts (`ColumnSession`).

The key comes from --key-file / ENCBENCH_KEY (HKDF-SHA256) or is generated per run
(`column_key_material`); each method derives its own subkey. It lives in the setup under a
key starting with `_` (never in a result file) and in the worker's memory only.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import CheckFailedError, WrongKeyError
from ..vocab.variants import VariantKey
from ..vocab import sweep
from .base import Operation, Param, Workload
from .capabilities import ColumnSession
from ..vocab.session import overlap_s

BASELINE = "none"
KEY_BYTES = 32  # the master key material a run holds; each method derives its own subkey from it
_HKDF_SALT = b"encbench column v1"

# the report table (engines' Table for the column workload): per-row throughput, CPU, the verdict
TABLE_COLUMNS = ("workload", "op", "variant", "elapsed", "d_elapsed", "cpu", "d_cpu", "rate", "d_rate", "verdict")


def value(i: int, generation: int = 0) -> bytes:
    """Row i's plaintext: an e-mail-like 23-byte value, unique per row (generation 1: the update's)."""
    return f"{'user' if generation == 0 else 'upd-'}{i:07d}@example.org".encode()


VALUE_BYTES = len(value(0))


def _hkdf(material: bytes, info: str, length: int) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=length, salt=_HKDF_SALT, info=info.encode()).derive(material)


def column_key_material(passphrase: str | None) -> tuple[bytes, str]:
    """(key material, where it came from): derived from a passphrase (--key-file, ENCBENCH_KEY), else random."""
    if passphrase:
        return _hkdf(passphrase.encode(), "master", KEY_BYTES), "derived (HKDF-SHA256) from the key given"
    return os.urandom(KEY_BYTES), "generated for this run (os.urandom), never stored"


# -- the client-side methods ---------------------------------------------------------------

class Plain:
    """No encryption: the value as it is (the baseline)."""

    name = BASELINE
    algorithm = ""
    searchable = True  # equal values are equal: an index on the column serves an equality lookup
    client = True  # the workload's side does the work (nothing to do here)
    overhead_bytes = 0

    def __init__(self, material: bytes | None = None):
        pass

    def encrypt(self, data: bytes) -> bytes:
        return data

    def decrypt(self, data: bytes) -> bytes:
        return data


class Gcm(Plain):
    """AES-256-GCM, a random 12-byte nonce per value: nonce || ciphertext || 16-byte tag."""

    name = "client-gcm"
    algorithm = "aes-256-gcm"
    searchable = False
    overhead_bytes = 12 + 16

    def __init__(self, material: bytes):
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead, self._invalid = AESGCM(_hkdf(material, self.name, 32)), InvalidTag

    def encrypt(self, data: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, data, None)

    def decrypt(self, data: bytes) -> bytes:
        try:
            return self._aead.decrypt(data[:12], data[12:], None)
        except self._invalid:
            raise _wrong_key(self) from None


class Siv(Plain):
    """AES-256-SIV (RFC 5297, a 512-bit key), deterministic: 16-byte synthetic IV || ciphertext."""

    name = "client-siv"
    algorithm = "aes-256-siv"
    searchable = True  # deterministic: the ciphertext of the value looked up equals the stored one
    overhead_bytes = 16

    def __init__(self, material: bytes):
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESSIV

        self._aead, self._invalid = AESSIV(_hkdf(material, self.name, 64)), InvalidTag

    def encrypt(self, data: bytes) -> bytes:
        return self._aead.encrypt(data, None)

    def decrypt(self, data: bytes) -> bytes:
        try:
            return self._aead.decrypt(data, None)
        except self._invalid:
            raise _wrong_key(self) from None


def _wrong_key(cipher) -> WrongKeyError:
    return WrongKeyError(f"a value of the encrypted column does not decrypt with the key given ({cipher.algorithm}: "
                         "the authentication tag does not match)",
                         hint="use the key it was encrypted with (--key-file or ENCBENCH_KEY)")


CLIENT_METHODS: dict[str, type[Plain]] = {c.name: c for c in (Plain, Gcm, Siv)}
CLIENT_DESCRIPTIONS = {
    "none": "plaintext, indexed (baseline)",
    "client-gcm": "AES-256-GCM in the client, random nonce (randomized: lookups scan and decrypt every row)",
    "client-siv": "AES-256-SIV in the client (deterministic: the index on the ciphertext serves lookups)",
}


@dataclass(frozen=True)
class InDatabase:
    """An engine's own method: plaintext goes to the session, whose SQL encrypts and decrypts."""

    name: str
    searchable: bool
    client = False
    algorithm = ""

    def encrypt(self, data: bytes) -> bytes:
        return data

    def decrypt(self, data: bytes) -> bytes:
        return data


def cipher_for(method: str, material: bytes, engine_methods: dict[str, bool] | None = None):
    """The codec the workload runs on its side: a client method's cipher, or a pass-through for an in-database one
    (engine_methods: name -> searchable)."""
    if method in CLIENT_METHODS:
        return CLIENT_METHODS[method](material)
    return InDatabase(method, bool((engine_methods or {}).get(method)))


def method_key(engine_methods: dict[str, str] | None = None,
               default: tuple[str, ...] = tuple(CLIENT_METHODS)) -> VariantKey:
    """The `method` key of an engine: the client methods every engine has, plus its own in-database ones
    (name -> description). Compared with `none`."""
    descriptions = {**CLIENT_DESCRIPTIONS, **(engine_methods or {})}
    return VariantKey("method", "how the column workload's value is protected: "
                      + "; ".join(f"{n}: {d}" for n, d in descriptions.items()),
                      default, tuple(descriptions), workloads=("column",))


# -- the workload ------------------------------------------------------------------------

def _spread(n: int, k: int) -> list[int]:
    """k row ids spread evenly over 1..n."""
    k = min(k, n)
    return [1 + (i * (n - 1)) // max(1, k - 1) for i in range(k)] if k > 1 else [1 + n // 2]


def _per_row(n: int, cipher_s: float) -> Callable[[dict], dict]:
    """The probes' totals per row: throughput, elapsed and CPU per row (both sides where the client is apart),
    and the share of the client's CPU the cipher calls took (an embedded engine: the process is the client)."""

    def check(metrics: dict) -> dict:
        out = {"cipher_us_per_row": 1e6 * cipher_s / n}
        if metrics.get("wall_s"):
            out.update(rows_per_s=n / metrics["wall_s"], wall_us_per_row=1e6 * metrics["wall_s"] / n)
        for metric, prefix in (("cpu_s", "cpu"), ("client_cpu_s", "client_cpu")):
            if metric in metrics:
                out[f"{prefix}_us_per_row"] = 1e6 * metrics[metric] / n
        side = metrics.get("client_cpu_s", metrics.get("cpu_s"))  # where the client's cipher calls count
        if side:
            out["cipher_share_of_cpu"] = cipher_s / side
        return out

    return check


def _timed(fn: Callable[[bytes], bytes], items: list[bytes]) -> tuple[list[bytes], float]:
    """fn over every item, with the calling thread's CPU time it took (the cipher's share of the operation)."""
    t0 = time.thread_time()
    out = [fn(x) for x in items]
    return out, time.thread_time() - t0


class Column(Workload):
    name = "column"
    needs = ColumnSession
    mutates = True
    description = ("one encrypted column (--method / method=none,client-gcm,client-siv, and the engine's own): insert N "
                   "rows, read and decrypt them all, point lookups by equality on the encrypted value, update every "
                   "value; per row: time, CPU, bytes, the cipher's share; whether the lookup used an index")
    params = (
        Param("column_rows", "rows of the column workload's table (inserted, read, updated)", 10_000, 1_000,
              minimum=10, maximum=10_000_000),
        Param("lookups", "point lookups by equality per run (column workload)", 20, 5, minimum=1, maximum=100_000),
    )

    def operations(self, session, scratch: Path, params: dict) -> list[Operation]:
        run = _ColumnRun(session, params["column_rows"], params["lookups"])
        n = run.n
        ops = [
            Operation("insert", run.insert, before=run.create, after=run.sizes, check=run.per_row),
            Operation("read", run.read, after=run.check_read, check=run.per_row),
            Operation("lookup", run.lookup, after=run.check_lookup, check=run.lookup_rates),
        ]
        update_op = Operation("update", run.update, check=run.per_row)
        if "sessions" not in session.variant:  # no --sessions: the four operations
            return ops + [update_op]
        k = int(session.variant["sessions"])
        readers = session.column_sessions()  # None: a client method (or SQLite): not swept, see SESSIONS_NOTE
        if k == 1:
            return ops + ([read_in_sessions(readers, n, 1)] if readers is not None else []) + [update_op]
        return [read_in_sessions(readers, n, k, fill=run.fill)] if readers is not None else []


class _ColumnRun:
    """One variant's column operations on one session: the values written, read back, looked up and updated
    through the variant's method, each checked; what one operation leaves for its check in `state`."""

    def __init__(self, session, n: int, k: int):
        self.session, self.n = session, n
        self.method = session.variant["method"]
        self.cipher = cipher_for(self.method, session.column_key(), session.column_methods())
        self.ids = list(range(1, n + 1))
        self.plain = [value(i) for i in self.ids]
        self.new_plain = [value(i, 1) for i in self.ids]
        self.targets = _spread(n, k)
        self.state: dict = {}

    def create(self) -> None:
        self.state["created"] = self.session.column_create(self.method, self.cipher.searchable)

    def insert(self) -> dict:
        stored, spent = _timed(self.cipher.encrypt, self.plain)
        self.session.column_insert(list(zip(self.ids, stored)))
        self.state["cipher_s"] = spent
        return {"column_rows": self.n, "cipher_cpu_s": spent, **self.state["created"]}

    def sizes(self) -> dict:
        n, size = self.n, self.session.column_size()
        return {"value_bytes_per_row": size["value_bytes"] / n, "db_bytes": size["db_bytes"],
                "db_bytes_per_row": size["db_bytes"] / n,
                "value_overhead_bytes": size["value_bytes"] / n - VALUE_BYTES}

    def read(self) -> dict:
        rows = self.session.column_read()
        self.state["read"], spent = _timed(self.cipher.decrypt, [v for _, v in rows])
        self.state["cipher_s"] = spent
        return {"column_rows": len(rows), "cipher_cpu_s": spent}

    def check_read(self) -> dict:
        if self.state.pop("read") != self.plain:
            raise CheckFailedError(f"column workload ({self.method}): the values read back differ from those written")
        return {"read_back_equal": 1}

    def lookup(self) -> dict:
        found, examined, spent = [], 0, 0.0
        for i in self.targets:
            if self.cipher.searchable:  # the ciphertext of the value (deterministic) through the index
                t0 = time.thread_time()
                probe = self.cipher.encrypt(value(i))
                spent += time.thread_time() - t0
                hits = self.session.column_lookup(probe)
                examined += len(hits)
            else:  # randomized: every row fetched and decrypted, the equal ones kept
                rows = self.session.column_read()
                clear, s = _timed(self.cipher.decrypt, [v for _, v in rows])
                spent += s
                examined += len(rows)
                hits = [rid for (rid, _), c in zip(rows, clear) if c == value(i)]
            found.append(list(hits))
        self.state["found"] = found
        return {"queries": len(self.targets), "rows_examined_per_lookup": examined / len(self.targets),
                "cipher_cpu_s": spent}

    def check_lookup(self) -> dict:
        found = self.state.pop("found")
        if [sorted(f) for f in found] != [[i] for i in self.targets]:
            raise CheckFailedError(f"column workload ({self.method}): a lookup by equality did not find exactly its row")
        return self.session.column_explain(self.cipher.searchable)

    def lookup_rates(self, metrics: dict) -> dict:
        if not metrics.get("wall_s"):
            return {}
        return {"qps": len(self.targets) / metrics["wall_s"],
                "wall_us_per_lookup": 1e6 * metrics["wall_s"] / len(self.targets)}

    def update(self) -> dict:
        stored, spent = _timed(self.cipher.encrypt, self.new_plain)
        changed = self.session.column_update([(v, i) for i, v in zip(self.ids, stored)])
        if changed != self.n:
            raise CheckFailedError(f"column workload ({self.method}): the update changed {changed} rows, not {self.n}")
        self.state["cipher_s"] = spent
        return {"column_rows": self.n, "cipher_cpu_s": spent}

    def per_row(self, metrics: dict) -> dict:  # after the run that set state["cipher_s"]
        return _per_row(self.n, self.state.pop("cipher_s"))(metrics)

    def fill(self) -> None:  # k > 1 sessions: the table of this level's sessions, written untimed
        self.create()
        self.session.column_insert(list(zip(self.ids, [self.cipher.encrypt(p) for p in self.plain])))


# -- the sessions sweep (--sessions 1,2,...: the sessions variant key of vocab/sweep.py) ----------------

SESSIONS_OP = sweep.COLUMN_OP
SESSIONS_NOTE = ("column sessions sweep: only the in-database methods run in k sessions (read-sessions: each session "
                 "has the server decrypt the whole table and return a count); the client methods and none are measured at sessions=1 "
                 "only: their cipher runs in encbench's own Python process, where k threads share one GIL, so their "
                 "efficiency would be Python's, not the cipher's (an application pool of k processes would scale "
                 "them as far as the client's cores allow)")


def read_in_sessions(readers, n: int, k: int, *, fill: Callable[[], None] | None = None) -> Operation:
    """read-sessions: k sessions (their own connections, opened untimed) released together, each having the server
    decrypt all n rows and return only how many did (an aggregate, as the hash workload's: the client's fetching
    is no part of what scales); the sessions' backends or threads are the server side measured. Its
    rows_per_s at each sessions level is what analysis.scaling turns into efficiency (a per-call lock in the
    crypto library shows as efficiency below 1)."""
    state: dict = {}

    def before() -> None:
        if fill is not None:
            fill()
        state["conns"] = readers.column_readers(k)
        target = readers.sessions_target(state["conns"])
        readers.use_target(target)
        state["cpus"] = sweep.server_cpus(target.pids)
        state["sides"] = len(set(target.threads)) if target.threads else len(set(target.pids))

    def run() -> dict:
        together = readers.column_read_together(state["conns"])
        counts, elapsed = together
        if counts != [n] * k:
            raise CheckFailedError(f"column workload: {k} sessions read {counts} rows, not {n} each")
        out = {"sessions": k, "rows_per_s": k * n / elapsed, "sessions_elapsed_s": elapsed,
               "server_cpus": state["cpus"], "sessions_server_sides": state["sides"]}
        spans = getattr(together, "spans", None)
        if spans:  # > 0: every session was running at once for that long
            out["sessions_overlap_s"] = overlap_s(spans)
        return out

    def after() -> dict:
        readers.use_target(None)
        readers.close_sessions(state.pop("conns"))
        return {}

    def check(metrics: dict) -> dict:
        return {f"{p}_us_per_row": 1e6 * metrics[m] / (k * n)
                for m, p in (("cpu_s", "cpu"), ("client_cpu_s", "client_cpu")) if m in metrics}

    return Operation(SESSIONS_OP, run, before, after, check=check)
