"""Which cipher really runs: the kernel driver behind an fscrypt mode (/proc/crypto), gocryptfs's backend.

The kernel picks, for a crypto name such as `xts(aes)`, the registered implementation of the
highest priority that passed its self-test; /proc/crypto lists it once instantiated (after the
first file was encrypted or decrypted). Whether it is an AES-NI/VAES (x86) or Crypto Extensions
(arm64) driver or the portable C code is read from the driver's name (DRIVER_KINDS).
"""

from __future__ import annotations

from pathlib import Path

# fscrypt mode (fscrypt status, Options) -> the kernel crypto API name it allocates
FSCRYPT_MODES = {
    "AES_256_XTS": "xts(aes)",
    "AES_256_CTS": "cts(cbc(aes))",
    "AES_128_CBC": "essiv(cbc(aes),sha256)",
    "AES_128_CTS": "cts(cbc(aes))",
    "AES_256_HCTR2": "hctr2(aes)",
    "ADIANTUM": "adiantum(xchacha12,aes)",
}
# a fragment of the driver name -> (accelerated?, what it is); first match wins
DRIVER_KINDS = (
    ("vaes", True, "VAES/AES-NI (x86 vector AES instructions)"),
    ("aesni", True, "AES-NI (x86 AES instructions)"),
    ("-ce", True, "ARMv8 Crypto Extensions"),
    ("neonbs", True, "NEON bit-sliced (arm, no AES instructions)"),
    ("aes-fixed-time", False, "software: generic C, constant-time (aes-fixed-time), no AES instructions"),
    ("aes-generic", False, "software: generic C table-based (aes-generic), no AES instructions"),
)


def proc_crypto(path: str = "/proc/crypto") -> list[dict]:
    entries, cur = [], {}
    try:
        text = Path(path).read_text()
    except OSError:
        return []
    for line in text.splitlines() + [""]:
        if not line.strip():
            if cur:
                entries.append(cur)
            cur = {}
            continue
        k, _, v = line.partition(":")
        cur[k.strip()] = v.strip()
    return entries


def classify(driver: str) -> tuple[bool | None, str]:
    for fragment, accelerated, what in DRIVER_KINDS:
        if fragment in driver:
            return accelerated, what
    return None, "unknown implementation"


def kernel_cipher(name: str, entries: list[dict] | None = None) -> dict:
    """The driver the kernel uses for `name`: the highest-priority self-tested one instantiated, with the others."""
    entries = proc_crypto() if entries is None else entries
    found = [e for e in entries if e.get("name") == name and e.get("selftest", "passed") == "passed"]
    if not name or not found:
        return {"name": name or None, "driver": None, "accelerated": None,
                "implementation": "not instantiated (no file encrypted yet) or unknown mode"}
    best = max(found, key=lambda e: int(e.get("priority", "0") or 0))
    accelerated, what = classify(best.get("driver", ""))
    return {"name": name, "driver": best.get("driver"), "module": best.get("module"),
            "priority": int(best.get("priority", "0") or 0), "accelerated": accelerated, "implementation": what,
            "others": sorted(e.get("driver", "") for e in found if e is not best)}


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The first CPU's flags (x86 `flags`, arm64 `Features`)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_has_aes(path: str = "/proc/cpuinfo") -> bool | None:
    flags = cpu_flags(path)
    return ("aes" in flags) if flags else None


def kernel_summary(mode: str | None, info: dict) -> str:
    """One sentence for a report: the mode, the driver, and whether the CPU's AES instructions are used."""
    if not info.get("driver"):
        return f"{mode}: kernel driver not known ({info.get('implementation')})"
    text = f"{mode} runs in the kernel through {info['driver']} ({info['implementation']})"
    if info.get("accelerated") is False and cpu_has_aes():
        text += "; the CPU has AES instructions but this kernel has no driver using them for this mode"
    return text
