"""The raw speed of a page cipher on this CPU: the reference the engine's per-page cost is set beside.

For SQLCipher 4 defaults a page read costs an HMAC-SHA512 check over the page plus an
AES-256-CBC decryption of its payload (page size minus the reserve for IV and HMAC).
Both primitives are timed in bulk (1 MiB per call, CPU time) through the libcrypto the
engine itself links when it can be reached (sqlcipher3 bundles its own OpenSSL; its EVP
functions are called through ctypes), else through `cryptography`; `openssl speed` (the
system's OpenSSL) is run beside it as a cross-check.

Why the old figure swung sixfold (5,937 vs 972 MB/s): `cryptography`'s `update()` returns
a new 1 MiB bytes object per call. When glibc serves it with a fresh mmap (its dynamic
mmap threshold depends on the process's history), every call page-faults about 480 times
and 70-80% of the "cipher" time is the kernel zeroing pages. The output now goes into one
preallocated buffer (`update_into`, `EVP_DecryptUpdate`): 0 faults per call.

The measurement is repeated (REPEATS), each repeat with the steal time of /proc/stat
around it; the reference is the geometric mean with a t-interval on the log values, and
the repeats, their spread and the steal are in the result file. A derived figure that
contradicts its reference (an engine faster than the raw cipher) is flagged by
`set_beside`, never printed as a percentage.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
import resource
import shutil
import subprocess
import time

from ..util.tdist import t_ppf
from . import procstat
from ..util import owners

IV = 16
HMAC_SHA512 = 64
BULK = 1 << 20
REPEATS = 7
SECONDS = 0.04  # CPU time per repeat and primitive
STEAL_FLAG = 0.05  # a repeat with more than 5% of the machine's CPU time stolen is flagged
CONFIDENCE = 0.95


# -- steal time ---------------------------------------------------------------------------


def cpu_times() -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs from /proc/stat (host/procstat, as lab/runctx reads it), or None where unreadable."""
    fields = (procstat.read_stat() or {}).get("cpu")
    if not fields:
        return None
    _, total, steal = procstat.busy_total_steal(fields)
    return steal, total


def steal_fraction(before, after) -> float | None:
    if not before or not after or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


# -- statistics of the repeats -------------------------------------------------------------


def reference_ci(values: list[float], confidence: float = CONFIDENCE) -> dict:
    """Geometric mean of positive rates with a t-interval on their logs (right for few repeats)."""
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not vals:
        return {"value": None, "ci": None, "n": 0}
    logs = [math.log(v) for v in vals]
    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return {"value": math.exp(mean), "ci": None, "n": n}
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = t_ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return {"value": math.exp(mean), "ci": [math.exp(mean - half), math.exp(mean + half)], "n": n,
            "spread": [min(vals), max(vals)], "cv": sd}


def _repeat(fn, nbytes: int, repeats: int, seconds: float) -> list[dict]:
    """MB/s of CPU time per repeat of fn (which handles nbytes per call), with steal and page faults."""
    fn()  # first-call effects (lazy dispatch, allocation) stay out of the figures
    out = []
    for _ in range(repeats):
        st0, ru0 = cpu_times(), resource.getrusage(resource.RUSAGE_SELF)
        calls, t0 = 0, time.process_time()
        while True:
            fn()
            calls += 1
            spent = time.process_time() - t0
            if spent >= seconds:
                break
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        out.append({"mb_per_s": calls * nbytes / spent / 1e6, "steal": steal_fraction(st0, cpu_times()),
                    "faults_per_call": (ru1.ru_minflt - ru0.ru_minflt) / calls,
                    "sys_share": (ru1.ru_stime - ru0.ru_stime) / spent if spent > 0 else None})
    return out


# -- implementations ----------------------------------------------------------------------


class EngineLibcrypto:
    """AES-256-CBC decryption and HMAC-SHA512 through the OpenSSL an engine's shared object exports."""

    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        for name in ("EVP_CIPHER_CTX_new", "EVP_aes_256_cbc", "EVP_sha512"):
            getattr(lib, name).restype = ctypes.c_void_p
        lib.EVP_DecryptInit_ex.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                           ctypes.c_char_p]
        lib.EVP_CIPHER_CTX_set_padding.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.EVP_DecryptUpdate.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                          ctypes.c_char_p, ctypes.c_int]
        lib.EVP_CIPHER_CTX_free.argtypes = [ctypes.c_void_p]
        lib.HMAC.restype = ctypes.c_void_p
        lib.HMAC.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint)]
        self.lib = lib
        try:
            lib.OpenSSL_version.restype = ctypes.c_char_p
            lib.OpenSSL_version.argtypes = [ctypes.c_int]
            self.version = lib.OpenSSL_version(0).decode()
        except AttributeError:
            self.version = "OpenSSL"

    def aes_cbc_decrypt(self, key: bytes, iv: bytes, data: bytes, out) -> None:
        lib, n = self.lib, ctypes.c_int()
        ctx = lib.EVP_CIPHER_CTX_new()
        try:
            if lib.EVP_DecryptInit_ex(ctx, lib.EVP_aes_256_cbc(), None, key, iv) != 1:
                raise RuntimeError("EVP_DecryptInit_ex failed")
            lib.EVP_CIPHER_CTX_set_padding(ctx, 0)
            if lib.EVP_DecryptUpdate(ctx, out, ctypes.byref(n), data, len(data)) != 1:
                raise RuntimeError("EVP_DecryptUpdate failed")
        finally:
            lib.EVP_CIPHER_CTX_free(ctx)

    def hmac_sha512(self, key: bytes, data: bytes, out) -> None:
        self.hmac("sha512", key, data, out)

    def hmac(self, digest: str, key: bytes, data: bytes, out) -> None:
        n = ctypes.c_uint()
        md = getattr(self.lib, f"EVP_{digest}")
        md.restype = ctypes.c_void_p
        if not self.lib.HMAC(ctypes.c_void_p(md()), key, len(key), data, len(data), out, ctypes.byref(n)):
            raise RuntimeError("HMAC failed")


def _engine_impl(path: str | None) -> tuple[object | None, str | None]:
    if not path:
        return None, "no engine library given"
    try:
        return EngineLibcrypto(path), None
    except (OSError, AttributeError) as e:
        return None, f"{type(e).__name__}: {e}"


def _bulk_fns(key: bytes, hkey: bytes, iv: bytes, big: bytes, engine=None, mode: str = "CBC", digest: str = "sha512"):
    """(aes, hmac) bulk callables: through the engine's libcrypto when given, else cryptography."""
    if engine is not None:
        out = ctypes.create_string_buffer(len(big) + 32)
        tag = ctypes.create_string_buffer(64)
        return (lambda: engine.aes_cbc_decrypt(key, iv, big, out)), (lambda: engine.hmac(digest, hkey, big, tag))
    from cryptography.hazmat.primitives import hashes, hmac
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    buf = bytearray(len(big) + 16)
    cipher_mode = {"CTR": modes.CTR, "CBC": modes.CBC}[mode]

    def aes() -> None:
        d = Cipher(algorithms.AES(key), cipher_mode(iv)).decryptor()
        d.update_into(big, buf)  # no new 1 MiB object per call: no page faults
        d.finalize()

    def mac() -> None:
        h = hmac.HMAC(hkey, {"sha512": hashes.SHA512, "sha256": hashes.SHA256, "sha1": hashes.SHA1}[digest]())
        h.update(big)
        h.finalize()

    return aes, mac


def _cryptography_version() -> str:
    from cryptography.hazmat.backends.openssl import backend

    return f"cryptography with {backend.openssl_version_text()}"


def openssl_speed(what: str, size: int = BULK, seconds: int = 1) -> float | None:
    """MB/s of `openssl speed` (the system's OpenSSL CLI) for one EVP cipher decryption or HMAC, or None."""
    tool = shutil.which("openssl")
    if not tool:
        return None
    cmd = [tool, "speed", "-seconds", str(seconds), "-bytes", str(size)]
    cmd += ["-hmac", "sha512"] if what == "hmac-sha512" else ["-evp", what, "-decrypt"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_openssl_speed(done.stdout)


def parse_openssl_speed(text: str) -> float | None:
    """The MB/s of the last result line ('AES-256-CBC  8222451.71k' = 1000-byte kB/s)."""
    for line in reversed(text.splitlines()):
        m = re.search(r"\s([\d.]+)k\s*$", line)
        if m:
            return float(m.group(1)) * 1000 / 1e6
    return None


def _summary(reps: list[dict]) -> dict:
    ref = reference_ci([r["mb_per_s"] for r in reps])
    steals = [r["steal"] for r in reps if r["steal"] is not None]
    return dict(ref, repeats=[round(r["mb_per_s"], 1) for r in reps],
                steal_max=max(steals) if steals else None,
                steal_flagged=sum(1 for s in steals if s > STEAL_FLAG),
                faults_per_call=max(r["faults_per_call"] for r in reps))


def _cross_checks(engine, reason: str | None, cbc: bool = True) -> dict:
    out = {"openssl_speed_aes_256_cbc_mb_per_s" if cbc else "openssl_speed_aes_256_ctr_mb_per_s":
           openssl_speed("aes-256-cbc" if cbc else "aes-256-ctr"),
           "openssl_speed_library": _openssl_cli_version()}
    if engine is None and reason:
        out["engine_libcrypto_error"] = reason
    return out


def _openssl_cli_version() -> str | None:
    try:
        return subprocess.run(["openssl", "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


SQLCIPHER_HMAC_BYTES = {"sha512": 64, "sha256": 32, "sha1": 20, None: 0}  # the page HMAC's tag (None: no HMAC)


def sqlcipher_reserve(hmac: str | None) -> int:
    """The bytes SQLCipher 4 reserves at a page's end: the IV and the HMAC tag, rounded up to the AES block."""
    return -(-(IV + SQLCIPHER_HMAC_BYTES[hmac]) // IV) * IV


def sqlcipher_page(page_size: int = 4096, *, engine_lib: str | None = None, repeats: int = REPEATS,
                   seconds: float = SECONDS, cross_check: bool = True, hmac: str | None = "sha512") -> dict:
    """Raw per-page cost of AES-256-CBC decryption + the page HMAC's check (SHA-512 by default, as SQLCipher 4
    does it; sha256, sha1, or None: no HMAC), with its CI."""
    reserve = sqlcipher_reserve(hmac)
    payload = page_size - reserve
    key, hkey, iv = os.urandom(32), os.urandom(64), os.urandom(IV)
    big = os.urandom(BULK)
    engine, reason = _engine_impl(engine_lib)
    aes_fn, mac_fn = _bulk_fns(key, hkey, iv, big, engine, digest=hmac or "sha512")
    aes, mac = [], []
    for _ in range(repeats):  # AES and HMAC interleaved: drift hits both
        aes += _repeat(aes_fn, BULK, 1, seconds)
        mac += _repeat(mac_fn, BULK, 1, seconds) if hmac else []
    if not hmac:
        mac = [{"mb_per_s": math.inf, "steal": 0.0} for _ in aes]
    per_page = [payload / (a["mb_per_s"] * 1e6) + (payload + IV + 4) / (m["mb_per_s"] * 1e6) for a, m in zip(aes, mac)]
    page = _summary([dict(a, mb_per_s=page_size / p / 1e6, steal=max(a["steal"] or 0, m["steal"] or 0))
                     for a, m, p in zip(aes, mac, per_page)])
    a_sum = _summary(aes)
    m_sum = _summary(mac) if hmac else {"value": None, "ci": None, "faults_per_call": 0}
    library = f"the engine's own libcrypto ({engine.version}, via ctypes)" if engine else _cryptography_version()
    mac_name = f"HMAC-{hmac.upper()}" if hmac else "no HMAC"
    out = {
        "cipher": (f"AES-256-CBC + {mac_name} per {page_size}-byte page"
                   + (" (SQLCipher 4 defaults)" if hmac == "sha512" else f" (SQLCipher 4, page HMAC {hmac or 'off'})")),
        "page_size": page_size,
        "payload_bytes": payload,
        "library": library,
        "repeats": repeats,
        "per_page_cpu_s": page_size / page["value"] / 1e6,
        "mb_per_s_per_core": page["value"],
        "mb_per_s_ci": page["ci"],
        "mb_per_s_repeats": page["repeats"],
        "bulk_aes_256_cbc_mb_per_s": a_sum["value"],
        "bulk_aes_256_cbc_mb_per_s_ci": a_sum["ci"],
        "bulk_aes_256_cbc_mb_per_s_range": a_sum.get("spread"),
        **({f"bulk_hmac_{hmac}_mb_per_s": m_sum["value"], f"bulk_hmac_{hmac}_mb_per_s_ci": m_sum["ci"],
            f"bulk_hmac_{hmac}_mb_per_s_range": m_sum.get("spread")} if hmac else {}),
        "steal_max": page["steal_max"],
        "steal_flagged_repeats": page["steal_flagged"],
        "page_faults_per_call": max(a_sum["faults_per_call"], m_sum["faults_per_call"]),
        "method": (f"{repeats} interleaved repeats of >= {seconds:g} s CPU per primitive, bulk {BULK >> 20} MiB "
                   "calls into one preallocated output buffer, through " + library + "; page cost = payload x AES "
                   "cost per byte + (payload + 20) x HMAC cost per byte; geometric mean with a 95% t-interval on "
                   "the log values; steal from /proc/stat around each repeat"),
    }
    if cross_check:
        out.update(_cross_checks(engine, reason))
        if engine is not None:  # the second implementation: cryptography's own OpenSSL build
            c_aes, _ = _bulk_fns(key, hkey, iv, big, None)
            out["cryptography_aes_256_cbc_mb_per_s"] = _summary(_repeat(c_aes, BULK, 3, seconds))["value"]
            out["cryptography_library"] = _cryptography_version()
    out["spread"] = spread_text(out)
    return out


def aes_page(page_size: int = 16384, mode: str = "CTR", *, repeats: int = REPEATS, seconds: float = SECONDS,
             cross_check: bool = True) -> dict:
    """Raw per-page cost of AES-256 (CTR or CBC) over a page, as MariaDB's file_key_management does it.

    InnoDB encrypts a page from its header's end to the checksum trailer; the whole page
    is taken here (within 0.3% of it). Timed in bulk 1 MiB calls into a preallocated buffer.
    """
    key, iv = os.urandom(32), os.urandom(IV)
    big = os.urandom(BULK)
    aes_fn, _ = _bulk_fns(key, os.urandom(64), iv, big, None, mode)
    s = _summary(_repeat(aes_fn, BULK, repeats, seconds))
    low = mode.lower()
    out = {
        "cipher": f"AES-256-{mode} per {page_size}-byte page (MariaDB file_key_management AES_{mode})",
        "page_size": page_size,
        "payload_bytes": page_size,
        "library": _cryptography_version(),
        "repeats": repeats,
        "per_page_cpu_s": page_size / s["value"] / 1e6,
        "mb_per_s_per_core": s["value"],
        "mb_per_s_ci": s["ci"],
        "mb_per_s_repeats": s["repeats"],
        f"bulk_aes_256_{low}_mb_per_s": s["value"],
        f"bulk_aes_256_{low}_mb_per_s_ci": s["ci"],
        f"bulk_aes_256_{low}_mb_per_s_range": s.get("spread"),
        "steal_max": s["steal_max"],
        "steal_flagged_repeats": s["steal_flagged"],
        "page_faults_per_call": s["faults_per_call"],
        "method": (f"{repeats} repeats of >= {seconds:g} s CPU, bulk {BULK >> 20} MiB calls into one preallocated "
                   "buffer through the cryptography package; geometric mean with a 95% t-interval on the log "
                   f"values; page cost = page size x AES-{mode} cost per byte"),
    }
    if cross_check:
        out.update(_cross_checks(None, None, cbc=(mode == "CBC")))
    out["spread"] = spread_text(out)
    return out


def spread_text(ref: dict) -> str:
    """'95% CI [a, b] MB/s over 7 repeats, steal <= 0.3%; openssl speed 8,222 MB/s' for the report."""
    parts = []
    if ref.get("mb_per_s_ci"):
        lo, hi = ref["mb_per_s_ci"]
        parts.append(f"95% CI [{lo:,.0f}, {hi:,.0f}] MB/s over {ref.get('repeats')} repeats")
    if ref.get("steal_max") is not None:
        parts.append(f"steal <= {ref['steal_max']:.1%}" + (f" ({ref['steal_flagged_repeats']} repeats > "
                                                           f"{STEAL_FLAG:.0%})" if ref.get("steal_flagged_repeats") else ""))
    for key, name in (("openssl_speed_aes_256_cbc_mb_per_s", "openssl speed AES-256-CBC decrypt"),
                      ("openssl_speed_aes_256_ctr_mb_per_s", "openssl speed AES-256-CTR decrypt"),
                      ("cryptography_aes_256_cbc_mb_per_s", "cryptography AES-256-CBC")):
        if ref.get(key):
            parts.append(f"{name} {ref[key]:,.0f} MB/s")
    return "; ".join(parts)


# -- setting a derived figure beside its reference -----------------------------------------


def set_beside(entry: dict, ref: dict) -> dict:
    """Put the engine's decrypt speed (entry) beside the raw cipher reference, flagging a contradiction.

    The engine's per-page work includes the raw cipher's, so it cannot be faster than it:
    - its whole CI above the reference's CI: a contradiction; no percentage is printed;
    - its estimate above the reference, the CIs overlapping: not resolved; no percentage;
    - its estimate below, but its CI reaching above the reference: the percentage is printed with a note
      that the upper end of its CI is not possible.
    """
    eng = entry.get("decrypt_mb_per_s_per_core")
    raw = ref.get("mb_per_s_per_core")
    if not eng or not raw:
        return entry
    raw_ci = ref.get("mb_per_s_ci") or [raw, raw]
    eng_ci = entry.get("decrypt_mb_per_s_ci")
    entry["raw_cipher_mb_per_s_per_core"] = raw
    entry["raw_cipher_mb_per_s_ci"] = raw_ci
    entry["raw_cipher_method"] = ref.get("method")
    pct = 100 * eng / raw
    standing = beyond_reference(eng, eng_ci, raw, raw_ci)
    if standing == CONTRADICTS:
        entry["raw_cipher_flag"] = (
            f"contradicts its reference: the engine would decrypt at {eng:,.0f} MB/s [{eng_ci[0]:,.0f}, "
            f"{eng_ci[1]:,.0f}], faster than this CPU's raw cipher ({raw:,.0f} [{raw_ci[0]:,.0f}, {raw_ci[1]:,.0f}]), "
            "which is not possible: one of the two figures is wrong; no percentage given")
    elif standing == UNRESOLVED:
        entry["raw_cipher_flag"] = (
            f"not resolved: {pct:.0f}% of the raw cipher speed is not possible, and the CIs overlap "
            f"(engine {_ci(eng_ci)}, raw {_ci(raw_ci)} MB/s): run longer; no percentage given")
    else:
        entry["percent_of_raw_cipher"] = pct
        if eng_ci:
            entry["percent_of_raw_cipher_ci"] = [100 * eng_ci[0] / raw, 100 * eng_ci[1] / raw]
            if standing == CI_ABOVE:
                entry["raw_cipher_flag"] = "the upper end of its CI is above the raw cipher speed, which is not possible"
    return entry


CONTRADICTS, UNRESOLVED, CI_ABOVE = "contradicts", "not resolved", "CI above"


def beyond_reference(eng: float, eng_ci, raw: float, raw_ci) -> str | None:
    """Where a speed that includes the raw cipher's work (so cannot exceed it) stands against it, both as rates
    (higher is faster; a cost c compares as 1/c): CONTRADICTS (its whole CI above the reference's CI), UNRESOLVED
    (its estimate above the reference, the CIs overlapping), CI_ABOVE (its estimate below, the upper end of its CI
    above the reference's), None (plausible). set_beside (pages) and analysis/columncost (column values) word it."""
    raw_ci = raw_ci or [raw, raw]
    if eng > raw_ci[1] and eng_ci and eng_ci[0] > raw_ci[1]:
        return CONTRADICTS
    if eng > raw:
        return UNRESOLVED
    if eng_ci and eng_ci[1] > raw_ci[1]:
        return CI_ABOVE
    return None


def _ci(ci) -> str:
    return f"[{ci[0]:,.0f}, {ci[1]:,.0f}]" if ci else "[n/a]"


# -- the raw cipher in instructions (--meter instructions), and a crypto probe (host/cpugap) ------------------

INSTRUCTION_PAGES = 32  # pages counted: the count is exact, the mean per page too


def _page_fns(page_size: int, engine_lib: str):
    """One SQLCipher 4 page read's primitives through the engine's libcrypto: AES-256-CBC decryption of the payload,
    HMAC-SHA512 over the payload, IV and page number (as sqlcipher_page_cipher / sqlcipher_page_hmac do)."""
    engine = EngineLibcrypto(engine_lib)
    payload = page_size - IV - HMAC_SHA512
    key, hkey, iv = os.urandom(32), os.urandom(64), os.urandom(IV)
    data, mac_in = os.urandom(payload), os.urandom(payload + IV + 4)
    out, mac = ctypes.create_string_buffer(payload + 32), ctypes.create_string_buffer(64)
    return lambda: (engine.aes_cbc_decrypt(key, iv, data, out), engine.hmac_sha512(hkey, mac_in, mac))


def page_instructions(page_size: int, engine_lib: str, pages: int = INSTRUCTION_PAGES) -> dict:
    """The raw cipher's instructions per page, counted as the engine's are (callgrind): the engine library's own
    instructions (its OpenSSL, the Python that calls it left out) over `pages` pages, divided by them."""
    from . import callgrind
    from . import valgrind
    import sys

    with owners.temporary_dir("encbench-rawinstr-") as tmp:  # owned: reclaimed after a kill
        argv = valgrind.callgrind_argv(f"{tmp}/cg.%p", cache_sim=False, options=("--collect-atstart=no",))
        argv += [sys.executable, "-m", "encbench.host.rawcipher", "instructions", str(page_size), engine_lib,
                 str(pages)]
        try:
            subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True,
                           env=dict(os.environ, PYTHONPATH=valgrind._src_path(), PYTHONHASHSEED="0"))
            found = [p for p in os.listdir(tmp) if re.fullmatch(r"cg\.\d+\.\d+", p)]
            dump = callgrind.read(os.path.join(tmp, sorted(found)[-1]))
        except (OSError, subprocess.SubprocessError, IndexError, ValueError) as e:
            return {"error": f"{type(e).__name__}: {e}"}
    own = os.path.realpath(engine_lib)
    mine = sum(c.get(callgrind.INSTRUCTIONS, 0) for (obj, _), c in dump.functions.items()
               if os.path.realpath(obj) == own)
    return {"cipher": f"AES-256-CBC + HMAC-SHA512 per {page_size}-byte page (SQLCipher 4 defaults)",
            "per_page": mine / pages, "pages": pages,
            "method": "callgrind over the engine's own libcrypto calls (its object's instructions only), per page"}


def _count_pages(page_size: int, engine_lib: str, pages: int) -> None:
    from . import valgrind

    one = _page_fns(page_size, engine_lib)
    one()  # first-call effects (lazy dispatch, allocation) stay out of the count
    valgrind.request(valgrind.TOGGLE_COLLECT)
    for _ in range(pages):
        one()
    valgrind.request(valgrind.TOGGLE_COLLECT)
    valgrind.dump_at(b"encbench-raw-cipher")


PROBE_PARTS = {"AES-CBC": 0, "SHA-512": 1}  # the page's primitives a crypto probe exercises alone


def _probe(family: str, engine_lib: str, seconds: float) -> None:
    """host/cpugap's probe of SQLCipher's libcrypto: one primitive in bulk for `seconds`, its MB/s printed."""
    engine = EngineLibcrypto(engine_lib)
    key, hkey, iv, big = os.urandom(32), os.urandom(64), os.urandom(IV), os.urandom(BULK)
    aes, mac = _bulk_fns(key, hkey, iv, big, engine)
    fn = (aes, mac)[PROBE_PARTS[family]]
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        calls += 1
    print(f"mb_per_s {calls * BULK / (time.perf_counter() - t0) / 1e6:.1f}")


if __name__ == "__main__":
    import sys

    if sys.argv[1] == "instructions":
        _count_pages(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "probe":
        _probe(sys.argv[2], sys.argv[3], float(sys.argv[4]))
