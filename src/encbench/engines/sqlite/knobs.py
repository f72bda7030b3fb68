"""SQLCipher's settings that change encryption's price, for `encbench advise` (issue 24).

Each knob is a variant key of the engine (engine.VARIANT_KEYS), applied as a DBA would (PRAGMAs after the key)
and read back from SQLCipher per run. What each value gives up is said in one plain line; a value that weakens
protection is never a plain win (analysis/advise.py). The explanations read the measurements: the per-page
decrypt cost of each value (analysis.derived) and this CPU's flags (SHA-NI).
"""

from __future__ import annotations

from ...vocab.knob import Cost, Knob, Sweep, per_page_read_us

# the page HMAC and the key derivation's hash: variant value -> what SQLCipher's PRAGMAs take and read back
HMAC = {"sha512": "HMAC_SHA512", "sha256": "HMAC_SHA256", "sha1": "HMAC_SHA1", "off": None}
KDF_ALGORITHMS = {"sha512": "PBKDF2_HMAC_SHA512", "sha256": "PBKDF2_HMAC_SHA256", "sha1": "PBKDF2_HMAC_SHA1"}
DEFAULT_HMAC, DEFAULT_KDF = "sha512", "sha512"

# knob -> (value, schema prefix) -> the PRAGMAs, after PRAGMA key, that set that value: what the engine runs
# (engine.cipher_pragmas) and what `advise` prints for the value measured
PRAGMAS = {
    "page_size": lambda v, at="": [f"PRAGMA {at}cipher_page_size = {v}"],
    "kdf_iter": lambda v, at="": [f"PRAGMA {at}kdf_iter = {v}"],
    "kdf_algorithm": lambda v, at="": [f"PRAGMA {at}cipher_kdf_algorithm = {KDF_ALGORITHMS[v]}"],
    "hmac": lambda v, at="": [f"PRAGMA {at}cipher_use_hmac = {'ON' if HMAC[v] else 'OFF'}",
                              *([f"PRAGMA {at}cipher_hmac_algorithm = {HMAC[v]}"] if HMAC[v] else [])],
}


def _pragmas(key: str, after: str):
    """A knob's setting of a value: its PRAGMAs, then what a DBA must know (`after`)."""
    return lambda value: "; ".join(PRAGMAS[key](value)) + after


KEY_SETTINGS = {"raw": "PRAGMA key = \"x'<64 hex digits>'\" (a raw key: no PBKDF2 at open)",
                "passphrase": "PRAGMA key = '<passphrase>' (derived with PBKDF2 at every open)"}

SCAN = Cost("scan-eq", "cpu_s", scope=(("cache", "cold"),), what="a cold full scan (every page decrypted)")
OLTP = Cost("oltp", "cpu_us_per_transaction", what="a transaction of the oltp mix")
OLTP_ENCRYPTED = Cost("oltp", "cpu_us_per_transaction", scope=(("encryption", "on"),),
                      what="a transaction of the oltp mix")  # a knob plain files have too: the encrypted ones
OPEN = Cost("(open)", "wall_s", operation="connect", what="opening a connection (the key derivation)")


def explain_hmac(entry: dict, ctx: dict) -> str | None:
    """Where the page HMAC's price goes, from the per-page costs measured in the same file, and the CPU's SHA-NI."""
    value, default = (per_page_read_us(entry, ctx, entry[side]) for side in ("contender", "baseline"))
    flags = ((ctx.get("docs") or {}).get(entry["file"], {}).get("environment") or {}).get("cpu", {}).get("flags", {})
    parts = []
    if value is not None and default is not None and default > 0:
        if entry["value"] == "off":
            parts.append(f"the page HMAC is {1 - value / default:.0%} of a page read's decrypt cost here "
                         f"({default:.1f} µs with HMAC-SHA512, {value:.1f} µs without)")
        else:
            parts.append(f"a page read costs {value:.1f} µs with HMAC-{entry['value'].upper()}, {default:.1f} µs with "
                         "HMAC-SHA512")
    if entry["value"] == "sha256" and flags:
        parts.append("this CPU has SHA-NI (SHA-256 in hardware; SHA-512 has none)" if flags.get("sha_ni")
                     else "this CPU has no SHA-NI")
    return "; ".join(parts) or None


def explain_memory(entry: dict, ctx: dict) -> str | None:
    """What encryption adds to a transaction at each cache size, from the file's oltp costs (encrypted vs plain at
    each share): a page the cache holds is decrypted once, a page it misses on every read."""
    costs = (ctx.get("analyses") or {}).get(entry["file"], {}).get("oltp_costs") or []
    at = {e["contender"]: e for e in costs}
    base, cont = at.get(entry["baseline"]), at.get(entry["contender"])
    if not base or not cont or base["added_cpu_us_per_txn"] is None or cont["added_cpu_us_per_txn"] is None:
        return None
    return (f"encryption adds {base['added_cpu_us_per_txn']:.0f} µs of CPU per transaction with {entry['default']} of "
            f"the data in the cache ({base['pages_read_per_txn'] or 0:.2f} page reads each, every one decrypted) "
            f"and {cont['added_cpu_us_per_txn']:.0f} µs with {entry['value']} "
            f"({cont['pages_read_per_txn'] or 0:.2f}): a page the cache holds is decrypted once")


def _fewer_iterations(value: str) -> bool:
    return value.isdigit() and int(value) < 256_000


class _Fewer(frozenset):
    """kdf_iter values below the default weaken the key derivation (any number: not a fixed set)."""

    def __contains__(self, value) -> bool:
        return _fewer_iterations(str(value))


KNOBS = (
    Knob("hmac", "page HMAC", "sha512", (SCAN, OLTP),
         gives_up={"off": "pages are no longer authenticated: a changed or corrupted page is decrypted and used as "
                          "data, undetected (a tampering attacker is not seen)",
                   "sha1": "a 160-bit SHA-1 tag (SQLCipher 3's): no known forgery of HMAC-SHA1, but SHA-1 is "
                           "deprecated and some compliance regimes refuse it",
                   "sha256": "", "sha512": ""},
         weakens=frozenset({"off", "sha1"}),
         setting=_pragmas("hmac", " after PRAGMA key, before the first read; a file keeps the HMAC it was written "
                                  "with (sqlcipher_export to change it)"),
         explain=explain_hmac),
    Knob("kdf_iter", "PBKDF2 iterations", "256000", (OPEN,),
         gives_up={v: (f"a stolen file's passphrase is {256000 // int(v)}x cheaper to guess (each guess costs "
                       f"{v} iterations instead of 256000)") for v in ("64000", "16000", "4000", "1000")},
         weakens=_Fewer(), setting=_pragmas("kdf_iter", " after PRAGMA key (the file is written with it)")),
    Knob("key", "key form", "passphrase", (OPEN,),
         gives_up={"raw": "no key derivation: the key must be 32 random bytes from a key manager (a passphrase used "
                          "as a raw key is as weak as the passphrase)"},
         setting=lambda value: KEY_SETTINGS.get(value, "")),
    Knob("kdf_algorithm", "key derivation hash", "sha512", (OPEN,),
         gives_up={"sha1": "PBKDF2-HMAC-SHA1 is cheaper per guess on GPUs than SHA-512: a stolen file's passphrase "
                           "is cheaper to guess", "sha256": "PBKDF2-HMAC-SHA256 runs well on GPUs: guesses are "
                                                            "cheaper than with SHA-512"},
         weakens=frozenset({"sha1", "sha256"}), setting=_pragmas("kdf_algorithm", " after PRAGMA key")),
    Knob("page_size", "page size", "4096", (SCAN, OLTP),
         gives_up={"1024": "", "16384": "larger pages: more bytes read (and decrypted) per random row, more space "
                                        "for small tables", "65536": "larger pages: more bytes read per random row"},
         setting=_pragmas("page_size", " after PRAGMA key (the file is written with it; sqlcipher_export to change "
                                           "it)")),
    # the page cache relative to the data (issue 24: "the engine's page cache size relative to the data"): pages sit
    # decrypted there, so a larger cache means fewer decryptions; compared with a quarter of the data in the cache
    Knob("memory", "page cache (share of the data)", "25%", (OLTP_ENCRYPTED,),
         gives_up={"50%": "", "100%": ""},
         setting="PRAGMA cache_size = -N (KiB per connection; SQLite's default is 2 MB): the share of the hot data "
                 "kept decrypted in memory",
         explain=explain_memory),
)


def sweeps(quick: bool) -> list[Sweep]:
    """One knob at a time, the rest at SQLCipher's defaults; --quick: the scans only (the mixes: the page HMAC and
    the cache's share of the data)."""
    cold = ("cache=cold",)
    out = [
        Sweep("hmac", "hmac", ("scan-eq",), ("encryption=off,on", "hmac=sha512,sha256,sha1,off", *cold)),
        Sweep("kdf-iter", "kdf_iter", ("scan-eq",), ("encryption=on", "kdf_iter=256000,64000", "cache=warm")),
        Sweep("key", "key", ("scan-eq",), ("encryption=on", "key=passphrase,raw", "cache=warm")),
        Sweep("kdf-algorithm", "kdf_algorithm", ("scan-eq",),
              ("encryption=on", "kdf_algorithm=sha512,sha256,sha1", "cache=warm")),
        Sweep("page-size", "page_size", ("scan-eq",), ("encryption=on", "page_size=1024,4096,16384", *cold)),
    ]
    if not quick:  # the page HMAC in a real mix: a quarter of the data in SQLite's cache
        out.append(Sweep("hmac-oltp", "hmac", ("oltp",), ("encryption=off,on", "hmac=sha512,sha256,off",
                                                          "memory=25%"), ("seconds=5", "warmup_seconds=2")))
        # the cache: encrypted and plain at each share, so that what encryption adds at each is known too
        out.append(Sweep("memory", "memory", ("oltp",), ("encryption=off,on", "memory=25%,100%"),
                         ("seconds=3", "warmup_seconds=1")))
    return out
