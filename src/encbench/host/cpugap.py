"""The CPU-model gap (`--meter instructions`, issue 23): the code a crypto library runs under valgrind and natively.

valgrind's simulated CPU lacks instructions this CPU may have (SHA-NI, AVX-512, VAES: host/valgrind.FEATURES
read through CPUID on both), and OpenSSL picks its code by the CPU it sees: under valgrind HMAC-SHA256 runs
`sha256_block_data_order_avx2`, natively `..._shaext`, so an instruction count of SHA-256 is not this CPU's work.
For each crypto family an engine's variants use, a probe program exercises it through the engine's own crypto
library (Engine.crypto_probes: `openssl speed -evp ...` for the system OpenSSL the servers link, a loop through
SQLCipher's bundled libcrypto for SQLite) three ways:

- under callgrind: the functions that run under valgrind (and, in a stripped library, the addresses the
  attribution then names by family: `function_families`);
- natively, sampled with perf when it can (the code this CPU runs) and timed (its speed);
- natively with OpenSSL held to valgrind's code path (OPENSSL_ia32cap set to the capability vector OpenSSL
  computes under valgrind: `openssl info -cpusettings` run there), sampled and timed the same way.

A family `differs` when the native and the held runs sample different code (perf: under a third of the hot
symbols or instruction addresses shared), or, without perf, when their speeds differ by more than
SPEED_DIFFERS; the ratio of the two speeds is how much of a native difference the missing instructions
explain. The results are cached per library, valgrind and CPU ($XDG_CACHE_HOME/encbench/cpugap-*.json).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import valgrind
from ..util import owners
from .rawcipher import parse_openssl_speed

PROBE_SECONDS = 1
SPEED_DIFFERS = 0.15  # without perf: a held speed this far from the native one means other code
SHARED_HOT = 1 / 3  # with perf: native and held runs sharing less than this of their hot code run other code
HOT_SHARE = 0.8  # the hot code: the symbols (or addresses) that hold this share of a run's samples in the library
FAMILY_SHARE = 0.05  # a stripped function with this share of a probe's library instructions is named by its family
OPENSSL_SPEED = {"AES-GCM": "aes-256-gcm", "AES-CBC": "aes-256-cbc", "ChaCha20-Poly1305": "chacha20-poly1305",
                 "SHA-256": "sha256", "SHA-512": "sha512"}
# the CPU features each family's code depends on (what OpenSSL's x86-64 dispatch looks at)
FEATURES = {"AES-GCM": ("aes", "pclmulqdq", "avx", "movbe", "vaes", "vpclmulqdq", "avx512f", "avx512bw", "avx512vl"),
            "AES-CBC": ("aes", "avx", "vaes", "avx512f"),
            "ChaCha20-Poly1305": ("avx2", "avx512f", "avx512vl", "adx", "bmi2"),
            "SHA-256": ("sha_ni", "avx2", "bmi1", "bmi2"), "SHA-512": ("avx2", "bmi1", "bmi2", "avx512f")}


def openssl_speed_probes(families=tuple(OPENSSL_SPEED)) -> dict[str, dict]:
    """The system OpenSSL's probes (what PostgreSQL and MariaDB link): `openssl speed` on one 16 KB block."""
    tool = shutil.which("openssl")
    if not tool:
        return {}
    return {f: {"argv": [tool, "speed", "-seconds", str(PROBE_SECONDS), "-bytes", "16384", "-evp", OPENSSL_SPEED[f]],
                "library": "libcrypto"} for f in families}


def held_caps(timeout: float = 120) -> str | None:
    """The OPENSSL_ia32cap vector OpenSSL computes on valgrind's CPU (`openssl info -cpusettings` under valgrind)."""
    tool = shutil.which("openssl")
    if not tool:
        return None
    try:
        done = subprocess.run([valgrind.find(), "--tool=none", "-q", valgrind.NO_VGDB, tool, "info", "-cpusettings"],
                              capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError, Exception):
        return None
    m = re.search(r"OPENSSL_ia32cap=(0x[0-9a-fA-F]+:0x[0-9a-fA-F]+)", done.stdout)
    return m.group(1) if m else None


def _speed(text: str) -> float | None:
    m = re.search(r"mb_per_s ([\d.]+)", text)
    return float(m.group(1)) if m else parse_openssl_speed(text)


def _perf_hot(data: Path, library: str) -> list[str]:
    """The symbols (or, stripped, the instruction addresses) holding HOT_SHARE of the library's samples."""
    try:
        done = subprocess.run(["perf", "report", "-i", str(data), "--sort", "dso,sym", "--stdio", "-F",
                               "overhead,dso,sym"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in done.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[\.\]\s+(\S+)", line)
        if m and re.search(library, m.group(2)):
            rows.append((float(m.group(1)), m.group(3)))
    total = sum(p for p, _ in rows)
    out, acc = [], 0.0
    for p, sym in sorted(rows, reverse=True):
        if acc >= HOT_SHARE * total:
            break
        out.append(sym)
        acc += p
    return out


def _native(argv: list[str], library: str, env: dict, perf: bool) -> tuple[float | None, list[str]]:
    """(MB/s, hot code) of one native run of a probe; the hot code with perf only."""
    with owners.temporary_dir("encbench-cpugap-") as tmp:  # owned: reclaimed after a kill
        data = Path(tmp) / "perf.data"
        cmd = (["perf", "record", "-q", "-F", "999", "-o", str(data), "--"] if perf else []) + argv
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        except (OSError, subprocess.SubprocessError):
            return None, []
        return _speed(done.stdout), (_perf_hot(data, library) if perf and data.exists() else [])


def _under_valgrind(argv: list[str], library: str, env: dict) -> list[tuple[str, str, float]]:
    """(object, function, share of the library's instructions) of the probe under callgrind, largest first."""
    from . import callgrind

    with owners.temporary_dir("encbench-cpugap-") as tmp:  # owned: reclaimed after a kill
        try:
            subprocess.run(valgrind.callgrind_argv(f"{tmp}/cg.%p", cache_sim=False) + argv, capture_output=True,
                           text=True, timeout=600, env=env)
            dumps = [callgrind.read(Path(tmp) / n) for n in os.listdir(tmp) if re.fullmatch(r"cg\.\d+", n)]
        except (OSError, subprocess.SubprocessError, ValueError, Exception):
            return []
    mine: dict[tuple[str, str], int] = {}
    for d in dumps:
        for (o, f), c in d.functions.items():
            if re.search(library, callgrind.object_name(o)):
                key = (callgrind.object_name(o), f)
                mine[key] = mine.get(key, 0) + c.get(callgrind.INSTRUCTIONS, 0)
    total = sum(mine.values()) or 1
    return sorted(((o, f, n / total) for (o, f), n in mine.items()), key=lambda x: -x[2])


def _shared(a: list[str], b: list[str]) -> float:
    return len(set(a) & set(b)) / len(set(a) | set(b)) if a and b else 0.0


def _cache_key(probes: dict[str, dict], host: list[str]) -> str:
    parts = [valgrind.version(), ",".join(host)]
    for f in sorted(probes):
        parts.append(f + " " + " ".join(probes[f]["argv"]))
        for a in probes[f]["argv"]:
            if os.path.isfile(a):
                st = os.stat(a)
                parts.append(f"{a}:{st.st_size}:{int(st.st_mtime)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "encbench"


def code_paths(probes: dict[str, dict], host: list[str], missing: list[str], perf_why: str | None) -> dict:
    """{"code_paths": [per family], "function_families": {object: {function: family}}, "held_caps": ...} (cached),
    or {"code_paths_error": why} when nothing could be probed. perf_why: why perf cannot sample here (None: it can;
    profiling.profiler.Profiler.available())."""
    if not probes:
        return {"code_paths_error": "no probe of the engine's crypto library (openssl not found)"}
    key = _cache_key(probes, host)
    cache = _cache_dir() / f"cpugap-{key}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    caps = held_caps()
    env = dict(os.environ, PYTHONPATH=valgrind._src_path())
    out: dict = {"code_paths": [], "function_families": {}, "held_caps": caps,
                 "native_sampled": perf_why is None, **({"native_sampling_error": perf_why} if perf_why else {})}
    for family, probe in probes.items():
        lib = probe["library"]
        under = _under_valgrind(probe["argv"], lib, env)
        native_speed, native_hot = _native(probe["argv"], lib, env, perf_why is None)
        held_speed, held_hot = (_native(probe["argv"], lib, dict(env, OPENSSL_ia32cap=caps), perf_why is None)
                                if caps else (None, []))
        if perf_why is None and native_hot and held_hot:
            differs = _shared(native_hot, held_hot) < SHARED_HOT
            basis = "perf: the hot code natively and held to valgrind's path"
        elif native_speed and held_speed:
            differs = abs(native_speed / held_speed - 1) > SPEED_DIFFERS
            basis = f"the speeds natively and held to valgrind's path (more than {SPEED_DIFFERS:.0%} apart: other code)"
        else:
            differs, basis = None, "not measured"
        hot = [(o, f) for o, f, share in under if share >= FAMILY_SHARE]
        named = [f for _, f in hot]
        for o, f in hot:
            if f.startswith("0x"):  # a stripped library: its functions are named by the probe that ran them
                out["function_families"].setdefault(o, {})[f] = family
        out["code_paths"].append({
            "family": family, "valgrind": named[:3], "native": [s for s in native_hot[:3]],
            "held": [s for s in held_hot[:3]], "native_mb_per_s": native_speed, "held_mb_per_s": held_speed,
            "differs": differs, "basis": basis,
            "missing": [f for f in FEATURES.get(family, ()) if f in missing]})
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(out))
    except OSError:
        pass
    return out


def sqlcipher_probes(engine_lib: str) -> dict[str, dict]:
    """SQLCipher's bundled libcrypto, through the same calls the raw cipher reference makes (host/rawcipher)."""
    from .rawcipher import PROBE_PARTS

    return {f: {"argv": [sys.executable, "-m", "encbench.host.rawcipher", "probe", f, engine_lib,
                         str(PROBE_SECONDS)], "library": re.escape(os.path.basename(engine_lib))}
            for f in PROBE_PARTS}
