"""MariaDB's settings that change encryption's price, for `encbench advise` (issue 24).

Four are startup options of the server (none can change while it runs): the key management plugin's cipher
(file_key_management_encryption_algorithm), and the encryption of the redo log (innodb_encrypt_log), of the
temporary files (encrypt_tmp_files) and of the binary log (encrypt_binlog, the binary log on). Each is a variant
key taking part only when named (labels and file names of other runs unchanged); the private server runs a server
per configuration the run's variants need (engine.prepare: the first one's on the main server, each other on a
server of its own with the same data), and every run reads the settings back from its server (`read_back`: a run
on other settings fails) and proves the files the setting encrypts were written during each measured operation
(`check_written`: redo log bytes, binary log bytes, temporary files created). A --dsn server is never restarted,
so there these keys are refused (`dsn_keys`) and advise says so in one line (`skipped`).

The fifth, the TLS suite (the `tls` key), is the client's: the suite it offers alone, against the one negotiated by
default (tls=on), each connection checked from the server's view; it is measured on --dsn servers too.

What each value gives up is said in one plain line; a value that weakens protection is never a plain win
(analysis/advise.py). The explanations read the measurements (per-page costs, bytes the setting encrypts per
transaction, merge passes, the negotiated suite, this CPU's AES instructions).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

from ...vocab.knob import Cost, Knob, Sweep, per_page_read_us
from ...errors import CheckFailedError, UsageError
from ...vocab.variants import Variant, VariantKey
from ...vocab.tls import forced

SORT = ("sort",)


@dataclass(frozen=True)
class Startup:
    """A server startup option as a variant key: its values and the settings each one means."""

    key: str  # the variant key
    variable: str  # the server's system variable
    values: dict[str, str]  # variant value -> the variable's value
    workloads: tuple[str, ...]  # where the files it encrypts are written (and where it is varied)
    written: str | None  # the counter (session.COUNTERS' name) that proves those files were written, or None
    written_what: str  # what that counter counts, in words
    written_hint: str  # what to run when nothing was written
    since: tuple[int, int, int]  # the first MariaDB version with it
    description: str
    default: str = "on"  # the knob's default (what every other value is compared with: KNOBS)
    also: dict[str, str] = field(default_factory=dict)  # settings it needs (encrypt_binlog: the binary log on)


ON_OFF = {"on": "ON", "off": "OFF"}
STARTUP = (
    Startup("encryption_algorithm", "file_key_management_encryption_algorithm",
            {"aes_cbc": "AES_CBC", "aes_ctr": "AES_CTR"}, ("scan-like", "scan-eq", "dml", "rebuild", "backup",
                                                           "oltp", *SORT),
            None, "", "", (10, 1, 3),
            "the key management plugin's cipher (file_key_management_encryption_algorithm): aes_cbc (the plugin's "
            "default, encbench's servers' unless named) or aes_ctr, a server per value; only when named", "aes_cbc"),
    Startup("encrypt_log", "innodb_encrypt_log", ON_OFF, ("oltp", "dml", "rebuild"), "redo_bytes_written",
            "redo log bytes (Innodb_os_log_written)", "use a writing workload, e.g. --workload oltp --variant "
            "script=oltp_read_write", (10, 1, 3),
            "the redo log's encryption (innodb_encrypt_log), a server per value; only when named"),
    Startup("encrypt_tmp_files", "encrypt_tmp_files", ON_OFF, SORT, "tmp_files_created",
            "temporary files (Created_tmp_files)", "use --workload sort (a sort larger than its buffer)", (10, 1, 5),
            "the encryption of the server's temporary files (encrypt_tmp_files: sort merge files, caches), a server "
            "per value; only when named"),
    Startup("encrypt_binlog", "encrypt_binlog", ON_OFF, ("oltp", "dml"), "binlog_bytes_written",
            "binary log bytes (Binlog_bytes_written)", "use a writing workload, e.g. --workload oltp --variant "
            "script=oltp_read_write", (10, 1, 7),
            "the binary log's encryption (encrypt_binlog; the binary log on for both values: log_bin), a server per "
            "value; only when named", also={"log_bin": "binlog", "server_id": "1"}),
)
BY_KEY = {s.key: s for s in STARTUP}


def variant_keys() -> tuple[VariantKey, ...]:
    """Taking part only when named; the algorithm only where a table is encrypted."""
    return tuple(VariantKey(s.key, s.description, (s.default,), tuple(s.values),
                            applies_when=(("encryption", "on"),) if s.key == "encryption_algorithm" else (),
                            workloads=s.workloads, named_only=s.workloads) for s in STARTUP)


def dsn_keys() -> tuple[VariantKey, ...]:
    """The same keys on a --dsn server: refused when named (a startup option needs a restart)."""
    def refuse(s: Startup):
        def check(value: str) -> str:
            raise UsageError(f"variant {s.key}={value}: {s.variable} is a startup option of the server; a --dsn "
                             "server would need a restart, which encbench never does",
                             hint=f"drop --variant {s.key}, or drop --dsn (a private server per value)")
        return check

    return tuple(VariantKey(s.key, f"with --dsn: none ({s.variable} is a startup option)", (), validate=refuse(s),
                            workloads=s.workloads, named_only=s.workloads) for s in STARTUP)


def startup_of(variant: Variant) -> dict[str, str]:
    """The server settings the variant's named knobs mean."""
    out: dict[str, str] = {}
    for s in STARTUP:
        if s.key in variant:
            out.update(s.also)
            out[s.variable] = s.values[variant[s.key]]
    return out


def server_key(variant: Variant) -> str:
    """The variant's named knob values ('encrypt_log=off'): the server that runs it (engine.prepare)."""
    return ",".join(f"{s.key}={variant[s.key]}" for s in STARTUP if s.key in variant)


def check_settings(settings: dict, variants: list[Variant]) -> None:
    """--setting and a named knob may not set the same server variable."""
    for v in variants:
        for name in startup_of(v):
            if name in settings:
                key = next(s.key for s in STARTUP if name == s.variable or name in s.also)
                raise UsageError(f"--setting {name} and --variant {key} both set {name}",
                                 hint=f"drop one: --variant {key} runs a server per value")


def expected(variant: Variant) -> dict[str, str]:
    """{server variable: value} the variant's named knobs must read back as (the binary log on with encrypt_binlog)."""
    out: dict[str, str] = {}
    for s in STARTUP:
        if s.key in variant:
            out[s.variable] = s.values[variant[s.key]]
            if "log_bin" in s.also:
                out["log_bin"] = "ON"
    return out


def _shown(value) -> str:
    """A variable's value as its setting is written: 1/0 as ON/OFF, an enum in capitals (the server answers aes_cbc)."""
    return {1: "ON", 0: "OFF", "1": "ON", "0": "OFF"}.get(value, str(value).upper())


def read_back(cur, variant: Variant) -> dict[str, str]:
    """The server's own word on every setting the variant's knobs name ({variable: value}); CheckFailedError
    when one is not what the variant asked for."""
    want = expected(variant)
    got = {}
    for name in want:
        cur.execute(f"SELECT @@GLOBAL.{name}")
        got[name] = _shown(cur.fetchone()[0])
    wrong = {k: (got[k], w) for k, w in want.items() if got[k] != w.upper()}
    if wrong:
        raise CheckFailedError("the server does not run the settings asked for: " + ", ".join(
            f"{k} is {g}, not {w}" for k, (g, w) in wrong.items()),
            hint="a private server per value is started with them: look at its log")
    return got


def check_written(variant: Variant, metrics: dict) -> dict:
    """Each named knob's files were written during the operation (its counter moved), else the run does not
    measure that setting: CheckFailedError."""
    out = {}
    for s in STARTUP:
        if s.key not in variant or not s.written or s.written not in metrics:
            continue
        if metrics[s.written] <= 0:
            raise CheckFailedError(f"{s.key}={variant[s.key]}: no {s.written_what} written during the operation, so "
                                   "the setting had nothing to encrypt here", hint=s.written_hint)
        out[f"{s.key}_proven"] = 1
    return out


def _version(text: str) -> tuple[int, ...] | None:
    m = re.search(r"Ver (\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(x) for x in m.groups()) if m else None


def server_version() -> str:
    """The installed mariadbd's version line ('' when it cannot be run)."""
    tool = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    try:
        return subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def unavailable(version_line: str) -> dict[str, str]:
    """Knob key -> 'not available in <version>' for the startup knobs this server version does not have."""
    have = _version(version_line)
    if have is None:
        return {}
    shown = ".".join(map(str, have))
    return {s.key: f"{s.key} ({s.variable}): not available in MariaDB {shown} (since "
                   f"{'.'.join(map(str, s.since))})" for s in STARTUP if have < s.since}


# -- the knobs: costs, what each value gives up, where the saving comes from -----------------------
SCAN = Cost("scan-eq", "cpu_s", scope=(("cache", "cold"),), what="a cold full scan (every page read and decrypted)")
OLTP = Cost("oltp", "cpu_us_per_transaction", what="a transaction of the oltp mix (server CPU)")
SORTING = Cost("sort", "cpu_s", what="a sort that spills to temporary files (server CPU)")
# the server's CPU per connection ranks (steadier here than the wall time, which the time is shown beside)
CONNECT = Cost("connect", "cpu_us_per_connection", operation="connect",
               what="opening a connection (TCP, TLS handshake, login: server CPU)")
CONNECT_TIME = Cost("connect", "wall_s", operation="connect", what="opening a connection (time)")
ROUNDTRIP = Cost("roundtrip", "cpu_us_per_query", operation="select-by-pk", what="a small query (server CPU)")


def _doc(ctx: dict, entry: dict) -> dict:
    return (ctx.get("docs") or {}).get(entry["file"], {})


def _raw(ctx: dict, entry: dict, value: str) -> float | None:
    """The calibration's raw cipher speed (MB/s per core) for an algorithm, in the entry's file."""
    raw = (_doc(ctx, entry).get("calibration") or {}).get("raw_cipher") or {}
    found = [r.get("mb_per_s_per_core") for k, r in raw.items() if k.endswith(f"/{value}")]
    return found[0] if found and found[0] else None


def explain_algorithm(entry: dict, ctx: dict) -> str | None:
    parts = []
    if entry["workload"] == "scan-eq":
        value, default = (per_page_read_us(entry, ctx, entry[side]) for side in ("contender", "baseline"))
        if value is not None and default is not None:
            parts.append(f"a cold page read's decrypt costs {value:.1f} µs with {entry['value'].upper()}, "
                         f"{default:.1f} µs with {entry['default'].upper()} here")
    a, b = _raw(ctx, entry, entry["value"]), _raw(ctx, entry, entry["default"])
    if a and b:
        parts.append(f"the raw cipher on this CPU decrypts {a:,.0f} MB/s per core in AES-256-"
                     f"{entry['value'][-3:].upper()}, {b:,.0f} in AES-256-{entry['default'][-3:].upper()} (decryption, "
                     "the read side: CBC encrypts one block after the other, CTR in parallel)")
    return "; ".join(parts) or None


def _per_unit(ctx: dict, entry: dict, label: str, metric: str, unit: str) -> float | None:
    """Mean of a metric over a count (an extra), over the measured runs of one variant of the entry's workload."""
    values = []
    for run in _doc(ctx, entry).get("runs", []):
        if run.get("warmup") or run.get("variant_label") != label or run.get("workload") != entry["workload"]:
            continue
        for op in run.get("operations", []):
            n = (op.get("extra") or {}).get(unit) if unit else 1
            m = (op.get("metrics") or {}).get(metric)
            if isinstance(m, (int, float)) and n:
                values.append(m / n)
    return sum(values) / len(values) if values else None


def _kb(x: float) -> str:
    return f"{x / 1024:.1f} KB"


def explain_written(entry: dict, ctx: dict) -> str | None:
    """How much the setting encrypts per unit of work here, from the counters of the default's runs."""
    s = BY_KEY[entry["key"]]
    if entry["workload"] == "sort":
        passes = _per_unit(ctx, entry, entry["baseline"], "sort_merge_passes", "")
        files = _per_unit(ctx, entry, entry["baseline"], "tmp_files_created", "")
        if passes is None or files is None:
            return None
        buffer = ((_doc(ctx, entry).get("workloads") or {}).get("sort", {}).get("params") or {}).get("sort_buffer_kb")
        with_buffer = f" with a {buffer} KB sort buffer" if buffer else ""
        return (f"each sort here made {passes:.0f} merge passes over {files:.0f} temporary files{with_buffer} "
                "(Sort_merge_passes, Created_tmp_files): every pass writes and reads the sort data through them, so "
                "the share grows with the passes (a larger sort_buffer_size makes fewer)")
    per = _per_unit(ctx, entry, entry["baseline"], s.written or "", "transactions")
    if per is None:
        return None
    text = (f"each transaction here writes {_kb(per)} of {s.written_what.split(' (')[0].removesuffix(' bytes')}: "
            f"what {s.variable} encrypts")
    raw = _own_raw(ctx, entry)
    if raw and entry.get("baseline_mean"):  # the cipher's share, from the raw speed: why it may not show
        text += (f"; the cipher alone on that is about {per / (raw['mb_per_s_per_core'] * 1e6) * 1e6:.1f} µs at this "
                 f"CPU's raw {raw['cipher'].split(' per ')[0]} speed, against {entry['baseline_mean']:,.0f} µs of "
                 "server CPU per transaction")
    return text


def _own_raw(ctx: dict, entry: dict) -> dict | None:
    """The calibration's raw reference of the server's own cipher (keyed by the page size alone)."""
    raw = (_doc(ctx, entry).get("calibration") or {}).get("raw_cipher") or {}
    found = [r for k, r in raw.items() if "/" not in k and r.get("mb_per_s_per_core")]
    return found[0] if found else None


def _protocol(value: str) -> str | None:
    f = forced(value)
    return f[0] if f else None


class _Weaker(frozenset):
    """TLS values that weaken protection: off, and TLS 1.2 (whatever the suite: its handshake is not encrypted)."""

    def __contains__(self, value) -> bool:
        return value == "off" or _protocol(str(value)) == "TLSv1.2"


class _SuiteLoss(dict):
    """What a TLS value gives up, from the suite's name (any PROTOCOL:SUITE a user names)."""

    def get(self, value, default=""):
        if value == "off":
            return ("no TLS: queries, results and the login exchange cross the network in plaintext, readable and "
                    "changeable by anyone on the path")
        f = forced(str(value))
        if not f:
            return default
        proto, suite = f
        parts = []
        if proto == "TLSv1.2":
            parts.append("TLS 1.2: the handshake, the server's certificate included, crosses the network unencrypted "
                         "(TLS 1.3 encrypts it)")
            if not suite.startswith(("ECDHE", "DHE")):
                parts.append("no forward secrecy: whoever obtains the server's key can decrypt recorded sessions")
            if "GCM" not in suite and "CHACHA" not in suite and "CCM" not in suite:
                parts.append("CBC with a separate HMAC instead of an AEAD cipher")
        if "AES128" in suite or "AES_128" in suite:
            parts.append("a 128-bit AES key instead of 256 bits (no practical attack on either; some regimes, e.g. "
                         "CNSA 2.0, require 256)")
        if "CHACHA20" in suite:
            parts.append("ChaCha20-Poly1305 is not a FIPS 140-approved cipher (only where FIPS mode is required)")
        return "; ".join(parts)


def _negotiated(ctx: dict, entry: dict, label: str) -> str | None:
    for run in _doc(ctx, entry).get("runs", []):
        tls = (run.get("session") or {}).get("tls") or {}
        if run.get("variant_label") == label and tls.get("cipher"):
            return f"{tls.get('version')} {tls['cipher']}"
    return None


def _suite_hash(suite: str) -> str | None:
    """The hash of a suite's PRF / key schedule (SHA256, SHA384) from its name."""
    m = re.search(r"[_-](SHA256|SHA384)$", suite)
    return m.group(1) if m else None


def explain_tls(entry: dict, ctx: dict) -> str | None:
    parts = []
    default = _negotiated(ctx, entry, entry["baseline"])
    if default:
        parts.append(f"the default negotiates {default} here")
    if entry.get("baseline_mean") is not None and entry["metric"] == "cpu_us_per_connection":
        parts.append(f"a connection costs the server {entry['baseline_mean'] / 1e3:.2f} ms of CPU with it")
    flags = ((_doc(ctx, entry).get("environment") or {}).get("cpu") or {}).get("flags") or {}
    mine, theirs = _suite_hash(entry["value"]), _suite_hash(default or "")
    if mine and theirs and mine != theirs:  # the handshake's transcript hash and key schedule use the suite's hash
        sha_ni = (" (SHA-NI on this CPU runs SHA-256 in hardware, not SHA-384)" if flags.get("sha_ni")
                  and {mine, theirs} == {"SHA256", "SHA384"} else "")
        parts.append(f"its handshake hashes with {mine[:3]}-{mine[3:]}, the default's with "
                     f"{theirs[:3]}-{theirs[3:]}{sha_ni}")
    if "CHACHA20" in entry["value"] and flags:
        parts.append("this CPU has AES instructions (AES-GCM in hardware; ChaCha20 in vector code)"
                     if flags.get("aes") else "this CPU has no AES instructions (ChaCha20 is the fast one there)")
    return "; ".join(parts) or None


def _startup(key: str, note: str):
    """A startup knob's setting of a value: its variable set to what the value means (STARTUP), then the note."""
    return lambda value: f"{BY_KEY[key].variable} = {BY_KEY[key].values.get(value, value)} {note}"


SETTING_NOTE = ("in the server's configuration file; a startup option (a restart), MariaDB's own default OFF, "
                "as on encbench's servers unless the run names it")
KNOBS = (
    Knob("encryption_algorithm", "key management cipher", BY_KEY["encryption_algorithm"].default, (SCAN, OLTP),
         gives_up={"aes_ctr": "", "aes_cbc": ""},
         setting=_startup("encryption_algorithm", "in the server's configuration file (a startup option: a restart; "
                          "data written under one cipher cannot be read under the other, so a server holding "
                          "encrypted data changes it only by a dump and reload)"),
         server_side=True, explain=explain_algorithm),
    Knob("encrypt_log", "redo log encryption", BY_KEY["encrypt_log"].default, (OLTP,),
         gives_up={"off": "the redo log (ib_logfile0) holds recent changes (row images of inserts, updates and "
                          "deletes) in plaintext until it is overwritten; `encbench leak-check --engine mariadb "
                          "--setting innodb_encrypt_log=OFF` finds them there"},
         weakens=frozenset({"off"}), setting=_startup("encrypt_log", SETTING_NOTE), server_side=True,
         explain=explain_written),
    Knob("encrypt_tmp_files", "temporary file encryption", BY_KEY["encrypt_tmp_files"].default, (SORTING,),
         gives_up={"off": "sort merge files and other temporary files of the server (in tmpdir) hold row data in "
                          "plaintext while a query uses them (deleted as they are made, so a scan of the "
                          "directory such as encbench leak-check does not see them; their blocks may stay on the "
                          "device)"},
         weakens=frozenset({"off"}), setting=_startup("encrypt_tmp_files", SETTING_NOTE), server_side=True,
         explain=explain_written),
    Knob("encrypt_binlog", "binary log encryption", BY_KEY["encrypt_binlog"].default, (OLTP,),
         gives_up={"off": "the binary log files (binlog.*) hold every committed change in plaintext, for as long as "
                          "they are kept; `encbench leak-check --engine mariadb --setting encrypt_binlog=OFF` finds "
                          "them there"},
         weakens=frozenset({"off"}), setting=_startup("encrypt_binlog", f"(with log_bin) {SETTING_NOTE}"), server_side=True,
         explain=explain_written),
    Knob("tls", "TLS suite", "on", (CONNECT, CONNECT_TIME, ROUNDTRIP), gives_up=_SuiteLoss(), weakens=_Weaker(),
         setting="the client's TLS options (e.g. --ssl-cipher / the driver's cipher list; TLS 1.3 suites through the "
                 "client's OpenSSL configuration), or the server's ssl_cipher and tls_version (startup options)",
         explain=explain_tls),
)

TLS_SUITES = ("on", "TLSv1.3:TLS_AES_128_GCM_SHA256", "TLSv1.3:TLS_CHACHA20_POLY1305_SHA256",
              "TLSv1.2:ECDHE-RSA-AES128-GCM-SHA256")


def sweeps(quick: bool, options: dict, missing: dict[str, str] | None = None) -> list[Sweep]:
    """One knob at a time, the rest at encbench's defaults; --dsn: the TLS suites only (the others are startup
    options); knobs this server version lacks (`missing`) left out."""
    oltp = ("seconds=2", "warmup_seconds=1") if quick else ("seconds=5", "warmup_seconds=2")
    rw = ("encryption=on", "script=oltp_read_write")
    tls = Sweep("tls", "tls", ("connect",) if quick else ("connect", "roundtrip"),
                ("tls=" + ",".join(TLS_SUITES), "clients=1"), ("connections=100", "seconds=2"))
    if options.get("dsn"):
        return [tls]
    out = [
        Sweep("encryption-algorithm", "encryption_algorithm", ("scan-eq",),
              ("encryption=off,on", "encryption_algorithm=aes_cbc,aes_ctr", "cache=cold")),
        Sweep("encrypt-log", "encrypt_log", ("oltp",), (*rw, "encrypt_log=on,off", "memory=100%"), oltp),
        Sweep("encrypt-tmp-files", "encrypt_tmp_files", ("sort",), ("encryption=on", "encrypt_tmp_files=on,off",
                                                                    "cache=warm")),
        tls,
    ]
    if not quick:
        out[1:1] = [Sweep("encryption-algorithm-oltp", "encryption_algorithm", ("oltp",),
                          (*rw, "encryption_algorithm=aes_cbc,aes_ctr", "memory=10%"), oltp)]
        out.insert(-1, Sweep("encrypt-binlog", "encrypt_binlog", ("oltp",),
                             (*rw, "encrypt_binlog=on,off", "memory=100%"), oltp))
    return [s for s in out if s.knob not in (missing or {})]


def skipped(options: dict, missing: dict[str, str] | None = None) -> list[str]:
    """The knobs advise does not measure here, one line each."""
    if options.get("dsn"):
        return [", ".join(s.variable for s in STARTUP) + ": startup options; a --dsn server cannot change them "
                "without a restart (encbench never restarts it), so only the TLS suites are measured (drop --dsn: a "
                "private server per value measures them)"]
    return [line + ": not measured" for line in (missing or {}).values()]


def server_groups(variants: list[Variant], base: dict) -> list[tuple[list[str], dict[str, str]]]:
    """The servers a run needs: (the server keys of the variants it runs, the startup settings it adds to `base`),
    one per distinct configuration, in the order of the variants (the first: the main server)."""
    groups: list[tuple[dict, list[str], dict[str, str]]] = []
    for v in variants:
        startup, key = startup_of(v), server_key(v)
        config = {**base, **startup}
        for found, keys, _ in groups:
            if found == config:
                if key not in keys:
                    keys.append(key)
                break
        else:
            groups.append((config, [key], startup))
    return [(keys, startup) for _, keys, startup in groups] or [([""], {})]
