"""PostgreSQL's settings that change encryption's price, for `encbench advise` (issue 24).

In transit: the TLS protocol and suite (the `tls` variant: forced suites against the suite the server and the client
negotiate by default, tls=on), the server's key exchange group (`ecdh_curve`: ALTER SYSTEM SET ssl_ecdh_curve and a
reload, proven per run by a handshake's negotiated group) and a connection per transaction against one reused, as a
pooler keeps it (`connection`: pgbench -C or not, proven per run by the sessions the server counted). At rest: the
filesystem's cipher, chosen when it is made (`gocryptfs_cipher`: gocryptfs -init -xchacha / -aessiv; `fscrypt_policy`:
the policy's contents mode where the kernel has more than one), proven per run from the mounted filesystem.

Each value is compared with its default in the same result file (analysis/advise.py); what it gives up is one plain
line, and a value that weakens protection is never a plain win. The explanations read the measurements: the suite
the default negotiated (pg_stat_ssl), TLS's own price at the default (tls=on against off in the same file), the
group each handshake used, what a new connection costs per transaction.
"""

from __future__ import annotations

import re

from ...vocab.knob import Cost, Knob, Sweep
from ...host.encfs import fscrypt
from ...vocab.tls import DEFAULT_TLS, TLS_RE

# the key exchange groups ssl_ecdh_curve takes (OpenSSL's names), each in TLS's words, and its key share's size on
# the wire (an uncompressed point: 1 + 2 x the field size; X25519's 32 bytes)
CURVES = {"prime256v1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521", "X25519": "X25519"}
DEFAULT_CURVE = "prime256v1"  # PostgreSQL's default ssl_ecdh_curve
KEY_SHARE_BYTES = {"prime256v1": 65, "secp384r1": 97, "secp521r1": 133, "X25519": 32}
GROUPS_SETTING_FROM = 180000  # PostgreSQL 18 renamed ssl_ecdh_curve to ssl_groups (a list OpenSSL reads as such)
# `connection`: pgbench's clients keep their connections (reused: what a pooler gives) or open one per transaction
# (pgbench -C); the knob compares reuse against a connection per transaction: the price a pooler takes away
CONNECTIONS = ("reused", "per-transaction")
DEFAULT_CONNECTION = "per-transaction"
SWEEP_CURVES = ("prime256v1", "secp384r1", "X25519")
QUICK_TLS = ("off", "on", "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384", "TLSv1.2:ECDHE-RSA-CHACHA20-POLY1305")
AT_REST_MEMORY = "25%"  # the at-rest sweeps' oltp mix: a quarter of pgbench's data in memory
# a full advise's workload settings (--quick: the workloads' quick values), for the 15-minute budget of a server
# engine (measured here: 6 values x 3 workloads x 7 runs with the workloads' defaults took 6 minutes alone). A
# connection takes ~20 ms here (SCRAM, TLS): 50 of them per run for the suites, 100 for the groups (the handshake
# is their only difference); the pooler's difference is an order of magnitude (3 s windows tell it); the at-rest mix
# keeps a 5 s warm-up (gocryptfs's daemon reaches its steady memory: the memory cgroup holding the share is sized on
# it)
TRANSIT_PARAMS = ("connections=50", "seconds=1", "messages=50000")
CURVE_PARAMS = ("connections=100",)
POOLER_PARAMS = ("seconds=3", "warmup_seconds=1")
AT_REST_PARAMS = ("seconds=3", "warmup_seconds=5")


def curve_setting(version_num: int) -> str:
    """The server setting that names the key exchange group(s)."""
    return "ssl_groups" if version_num >= GROUPS_SETTING_FROM else "ssl_ecdh_curve"


def curve_unavailable(curve: str, version_num: int, version: str) -> str | None:
    """Why a server of this version cannot use a group (one line), or None. Before PostgreSQL 18, ssl_ecdh_curve
    names one curve that the server makes an EC_KEY of (EC_KEY_new_by_curve_name): X25519 is no such curve, the
    reload logs "ECDH: could not create key" and keeps the TLS context it had (seen here on 15.18)."""
    if curve == "X25519" and version_num < GROUPS_SETTING_FROM:
        return (f"not available in PostgreSQL {version.split()[0]}: its ssl_ecdh_curve makes an EC_KEY of one named curve, "
                "which X25519 is not (the server keeps its old TLS context); PostgreSQL 18's ssl_groups takes it")
    return None


# -- what each value gives up ---------------------------------------------------------------------------------

class _Rule(dict):
    """gives_up for a key whose values are not a fixed set (any PROTOCOL:SUITE): the line comes from a rule."""

    def __init__(self, rule):
        super().__init__()
        self.rule = rule

    def get(self, value, default=None):
        return self.rule(str(value))


class _Weaker(frozenset):
    """weakens for a key whose values are not a fixed set: a rule decides."""

    def __new__(cls, rule):
        out = super().__new__(cls)
        out.rule = rule
        return out

    def __contains__(self, value) -> bool:
        return self.rule(str(value))


def _tls_parts(value: str) -> list[tuple[str, bool]]:
    """(what a tls value gives up against the negotiated default, whether that weakens protection), each part."""
    if value == "off":
        return [("no encryption on the wire: queries and results travel in plaintext, readable and alterable on the "
                 "path, and the server is not authenticated by a certificate", True)]
    m = TLS_RE.match(value)
    if not m:
        return []
    proto, suite, group = m.group(1), m.group(2).upper(), m.group(3)
    out = []
    if proto == "TLSv1.2":
        out.append(("TLS 1.2 instead of 1.3: the handshake, the server's certificate included, is not encrypted", True))
        if not re.match(r"^(ECDHE|DHE)-", suite):
            out.append(("no forward secrecy (RSA key exchange): the server's key decrypts recorded sessions", True))
        if not re.search(r"GCM|CHACHA20|CCM", suite):
            out.append(("a CBC suite (MAC-then-encrypt), the construction padding-oracle attacks (Lucky Thirteen) "
                        "targeted; RFC 9325 recommends AEAD suites only", True))
    if re.search(r"AES128|AES_128", suite):
        out.append(("a 128-bit AES key instead of 256 bits", True))
    if "CHACHA20" in suite:
        out.append(("ChaCha20-Poly1305 is not a FIPS 140-approved cipher", False))
    if group:
        line = CURVE_GIVES_UP.get(group) or ""
        if line:
            out.append((line, False))
    return out


def tls_gives_up(value: str) -> str:
    return "; ".join(text for text, _ in _tls_parts(value))


def tls_weakens(value: str) -> bool:
    return any(weak for _, weak in _tls_parts(value))


CURVE_GIVES_UP = {
    "prime256v1": "",
    "secp384r1": "nothing in strength (P-384: a 192-bit security level, P-256's is 128), only a larger key share on "
                 "the wire (97 bytes instead of 65)",
    "secp521r1": "nothing in strength (P-521: a 256-bit security level), only a larger key share on the wire (133 "
                 "bytes instead of 65)",
    "X25519": "X25519 is not among the curves FIPS 140 key agreement approves (SP 800-56A Rev. 3 lists NIST curves): "
              "a FIPS-mode server needs P-256 or P-384",
}


# -- where the saving comes from, read from the measurements ----------------------------------------------------

def _runs(ctx: dict, entry: dict, label: str) -> list[dict]:
    doc = (ctx.get("docs") or {}).get(entry["file"]) or {}
    return [r for r in doc.get("runs", []) if r.get("variant_label") == label and not r.get("warmup")]


def _session(ctx: dict, entry: dict, label: str, key: str) -> dict:
    """A session fact (tls, ecdh, ...) of the first measured run of a variant."""
    for r in _runs(ctx, entry, label):
        found = (r.get("session") or {}).get(key)
        if found:
            return found
    return {}


def _comparison(ctx: dict, source: str, workload: str, operation: str, contender: str, metric: str) -> dict | None:
    for c in ((ctx.get("analyses") or {}).get(source) or {}).get("comparisons") or []:
        if (c["workload"], c["operation"], c["contender"], c["metric"]) == (workload, operation, contender, metric):
            return c
    return None


def _mean(ctx: dict, source: str, workload: str, operation: str, variant: str, metric: str) -> float | None:
    for s in ((ctx.get("analyses") or {}).get(source) or {}).get("summaries") or []:
        if (s["workload"], s["operation"], s["variant"], s["metric"]) == (workload, operation, variant, metric):
            return s.get("mean")
    return None


def _cpu_flags(ctx: dict, entry: dict) -> dict:
    doc = (ctx.get("docs") or {}).get(entry["file"]) or {}
    return ((doc.get("environment") or {}).get("cpu") or {}).get("flags") or {}


def explain_tls(entry: dict, ctx: dict) -> str | None:
    """The suite the default negotiated here, TLS's own price on this cost at the default (against tls=off in the
    same file), and the CPU's AES instructions where a ChaCha20 suite is set against AES-GCM."""
    parts = []
    tls = _session(ctx, entry, entry["baseline"], "tls")
    if tls.get("cipher"):
        parts.append(f"the default negotiates {tls.get('version')} {tls['cipher']} here (pg_stat_ssl)")
    c = _comparison(ctx, entry["file"], entry["workload"], entry["operation"], entry["baseline"], entry["metric"])
    if c and c.get("ratio") and c.get("baseline", "").startswith("tls=off") and entry["value"] != "off":
        parts.append(f"TLS as negotiated costs {(c['ratio'] - 1) * 100:+.0f}% of this against no TLS")
    if "CHACHA20" in entry["value"].upper():
        flags = _cpu_flags(ctx, entry)
        if flags:
            parts.append("this CPU has AES instructions (AES-GCM runs in hardware, ChaCha20 in vector code)"
                         if flags.get("aes") else "this CPU has no AES instructions")
    return "; ".join(parts) or None


def explain_curve(entry: dict, ctx: dict) -> str | None:
    """The group each side's handshakes used (the runs' proof), a connection's time at the default, the key shares."""
    got = _session(ctx, entry, entry["contender"], "ecdh").get("negotiated_group")
    parts = []
    ms = _mean(ctx, entry["file"], entry["workload"], entry["operation"], entry["baseline"], "ms_per_connect")
    if ms is not None:
        parts.append(f"a connection (TCP, TLS handshake, SCRAM authentication) takes {ms:.1f} ms here with "
                     f"{CURVES[entry['default']]}; the key exchange is one part of it")
    if got:
        parts.append(f"every run's handshake negotiated {got} (proven per run)")
    sizes = [KEY_SHARE_BYTES.get(entry["value"]), KEY_SHARE_BYTES.get(entry["default"])]
    if None not in sizes:
        parts.append(f"key shares of {sizes[0]} bytes against {sizes[1]}")
    return "; ".join(parts) or None


def explain_connection(entry: dict, ctx: dict) -> str | None:
    """What a new connection adds to a transaction (the default's CPU per transaction minus reuse's), and the TLS
    handshake's part of a connection where a file measured connect with and without TLS."""
    base, cont = entry.get("baseline_mean"), None
    mean = _mean(ctx, entry["file"], entry["workload"], entry["operation"], entry["contender"], entry["metric"])
    if mean is not None:
        cont = mean
    parts = []
    if base is not None and cont is not None and base > cont:
        parts.append(f"a new connection per transaction adds {base - cont:.0f} µs of server CPU to each "
                     f"({(base - cont) / base:.0%} of a transaction's); a pooler pays it once per connection")
    for source in (ctx.get("analyses") or {}):
        on = _mean(ctx, source, "connect", "connect", "tls=on", "cpu_us_per_connection")
        off = _mean(ctx, source, "connect", "connect", "tls=off", "cpu_us_per_connection")
        if on and off and on > off:
            parts.append(f"the TLS handshake is {on - off:.0f} µs of a connection's {on:.0f} µs of server CPU "
                         f"(connect, tls=on against off, {source.rsplit('/', 1)[-1]})")
            break
    return "; ".join(parts) or None


def explain_at_rest(entry: dict, ctx: dict) -> str | None:
    """The cipher each filesystem ran (read back per run), its speed as gocryptfs measured it here (-speed, once per
    run file), the CPU's AES instructions beside a ChaCha-based value, and the memory share of an oltp row."""
    key = entry["key"]
    running = _session(ctx, entry, entry["contender"], "filesystem").get("options") or {}
    default = _session(ctx, entry, entry["baseline"], "filesystem").get("options") or {}
    parts = []
    name = {"gocryptfs_cipher": "content_encryption", "fscrypt_policy": "contents"}[key]
    if running.get(name) and default.get(name):
        parts.append(f"{running[name]} against {default[name]} (read back from the mounted filesystem per run)")
    speed = (((ctx.get("docs") or {}).get(entry["file"]) or {}).get("dataset") or {}).get("gocryptfs_speed") or {}
    rates = speed.get("reported_mb_s") or {}
    pick = {c: max(((n, r) for n, r in rates.items() if n.startswith(c + "-")), key=lambda x: x[1], default=None)
            for c in (running.get(name), default.get(name)) if c}
    if key == "gocryptfs_cipher" and len(pick) == 2 and None not in pick.values():
        parts.append("gocryptfs -speed here: " + ", ".join(f"{n} {r:,.0f} MB/s" for n, r in pick.values()))
    if entry["value"] in ("xchacha", "adiantum"):
        flags = _cpu_flags(ctx, entry)
        if flags:
            parts.append("this CPU has AES instructions" if flags.get("aes") else "this CPU has no AES instructions")
    memory = next((v.get("memory") for v in [_variant(ctx, entry)] if v), None)
    if entry["workload"] == "oltp" and memory:
        parts.append(f"{memory} of the data in memory")
    return "; ".join(parts) or None


def _variant(ctx: dict, entry: dict) -> dict:
    runs = _runs(ctx, entry, entry["contender"])
    return runs[0]["variant"] if runs else {}


# -- the knobs ------------------------------------------------------------------------------------------------------

ROUNDTRIP = Cost("roundtrip", "cpu_us_per_query", what="a query on an open TLS connection (roundtrip: server CPU "
                                                       "per query)")
STORM = Cost("storm", "cpu_s", operation="messages", what="a storm of small messages (server CPU)")
CONNECT = Cost("connect", "wall_s", operation="connect", what="opening a connection (TCP, TLS handshake, "
                                                              "authentication: elapsed)")
CONNECT_CPU = Cost("connect", "cpu_us_per_connection", operation="connect",
                   what="opening a connection (server CPU per connection)")
POOLED = Cost("oltp", "cpu_us_per_transaction", scope=(("tls", "on"),),
              what="a transaction of pgbench's mix over TLS (server CPU per transaction)")
POOLED_CLIENT = Cost("oltp", "client_cpu_us_per_transaction", scope=(("tls", "on"),),
                     what="a transaction of pgbench's mix over TLS (client CPU per transaction)")
GOCRYPTFS_SCAN = Cost("scan-eq", "cpu_s", scope=(("cache", "cold"),),
                      what="a cold full scan on gocryptfs (server CPU, the gocryptfs daemon's included)")
GOCRYPTFS_OLTP = Cost("oltp", "cpu_us_per_transaction", what="a transaction of pgbench's mix on gocryptfs, part of "
                                                               "the data out of memory (server CPU, the daemon's "
                                                               "included)")
# fscrypt decrypts in the kernel's worker threads, in no process of the server: a scan's elapsed time and those
# threads' CPU (the kworkers probe), a transaction's latency
FSCRYPT_SCAN = Cost("scan-eq", "wall_s", scope=(("cache", "cold"),),
                    what="a cold full scan on fscrypt (elapsed: the kernel decrypts in its worker threads)")
FSCRYPT_SCAN_KWORKERS = Cost("scan-eq", "kworker_cpu_s", scope=(("cache", "cold"),),
                             what="a cold full scan on fscrypt (the kernel worker threads' CPU)")
FSCRYPT_OLTP = Cost("oltp", "latency_p50_ms", what="a transaction of pgbench's mix on fscrypt, part of the data out "
                                                     "of memory (median latency)")

FSCRYPT_OPTIONS = {k: f"contents {c}, filenames {f}" for k, (c, f) in fscrypt.POLICIES.items()}  # fscrypt.conf's
GOCRYPTFS_FLAGS = {"aes-gcm": "", "xchacha": " -xchacha", "aessiv": " -aessiv"}  # gocryptfs -init's flag per cipher

KNOBS = (
    Knob("tls", "TLS protocol and suite", "on", (ROUNDTRIP, STORM, CONNECT),
         gives_up=_Rule(tls_gives_up), weakens=_Weaker(tls_weakens),
         setting="the server's ssl_min_protocol_version / ssl_max_protocol_version and ssl_ciphers (TLS 1.2 "
                 "suites, in order of preference), or the client's ssl_min_protocol_version / "
                 "ssl_max_protocol_version and its OpenSSL cipher list",
         explain=explain_tls),
    Knob("ecdh_curve", "key exchange group", DEFAULT_CURVE, (CONNECT, CONNECT_CPU),
         gives_up=dict(CURVE_GIVES_UP),
         setting=lambda value: f"ALTER SYSTEM SET ssl_ecdh_curve = '{value}'; SELECT pg_reload_conf() (PostgreSQL 18: "
                               "ssl_groups, a list)", server_side=True, explain=explain_curve),
    Knob("connection", "connection per transaction or reused (a pooler)", DEFAULT_CONNECTION, (POOLED, POOLED_CLIENT),
         gives_up={"reused": "", "per-transaction": ""},
         setting="a connection pooler (PgBouncer, the driver's pool): connections opened once and reused by the "
                 "transactions that follow", explain=explain_connection),
    Knob("gocryptfs_cipher", "gocryptfs content cipher", "aes-gcm", (GOCRYPTFS_SCAN, GOCRYPTFS_OLTP),
         gives_up={"aes-gcm": "", "xchacha": "XChaCha20-Poly1305 is not a FIPS 140-approved cipher (and gocryptfs "
                                            "before 2.2 cannot mount it)",
                   "aessiv": "AES-SIV is not a FIPS 140-approved mode"},
         setting=lambda value: f"gocryptfs -init{GOCRYPTFS_FLAGS.get(value, '')} when the cipher directory is made: a "
                               "directory keeps its cipher", explain=explain_at_rest),
    Knob("fscrypt_policy", "fscrypt contents mode", "aes-256-xts", (FSCRYPT_SCAN, FSCRYPT_SCAN_KWORKERS, FSCRYPT_OLTP),
         gives_up={"aes-256-xts": "", "adiantum": "Adiantum (XChaCha12 with AES-256) is not a FIPS 140-approved mode",
                   "aes-128-cbc": "a 128-bit key (AES-128-CBC-ESSIV) instead of AES-256-XTS's 256-bit one"},
         weakens=frozenset({"aes-128-cbc"}),
         setting=lambda value: f"fscrypt.conf's options: {FSCRYPT_OPTIONS.get(value, value)}, before `fscrypt encrypt`: "
                               "a directory keeps its policy", explain=explain_at_rest),
)


# -- the sweeps -------------------------------------------------------------------------------------------------------

def sweeps(quick: bool, *, curves: tuple[str, ...] | None, dsn: bool, gocryptfs: tuple[str, ...] | None,
           fscrypt: tuple[str, ...] | None) -> list[Sweep]:
    """One knob at a time, the rest as the server has them. curves / gocryptfs / fscrypt: the values that can run
    here (None, or one value only: that sweep is left out; the caller said why). --quick: the protocol and one
    suite of each kind on connect and roundtrip, the at-rest ciphers on the cold scan only."""
    def params(full: tuple[str, ...]) -> tuple[str, ...]:
        return () if quick else full

    tls = ",".join(QUICK_TLS if quick else DEFAULT_TLS)
    out = [Sweep("tls", "tls", ("connect", "roundtrip") if quick else ("connect", "roundtrip", "storm"),
                 (f"tls={tls}", "clients=1"), params(TRANSIT_PARAMS))]
    if curves and len(curves) > 1:
        out.append(Sweep("ecdh-curve", "ecdh_curve", ("connect",), ("tls=on", f"ecdh_curve={','.join(curves)}"),
                         params(CURVE_PARAMS)))
    memory = () if dsn else ("memory=100%",)  # a --dsn server's memory is never changed
    out.append(Sweep("connection", "connection", ("oltp",), ("tls=on", f"connection={','.join(CONNECTIONS)}",
                                                             *memory), params(POOLER_PARAMS)))
    at_rest = ("scan-eq",) if quick else ("scan-eq", "oltp")
    for name, key, enc, values in (("gocryptfs-cipher", "gocryptfs_cipher", "gocryptfs", gocryptfs),
                                   ("fscrypt-policy", "fscrypt_policy", "fscrypt", fscrypt)):
        if values and len(values) > 1:
            out.append(Sweep(name, key, at_rest, (f"encryption={enc}", f"{key}={','.join(values)}", "cache=cold",
                                                  f"memory={AT_REST_MEMORY}"), params(AT_REST_PARAMS)))
    return out
