"""tls-scan baselines: save a scan, and tell later what changed (for cron or CI).

A baseline is the scan's JSON (kind "encbench-tls-scan", version 1). Drift is any change
in: the protocols accepted, the suites accepted per protocol, their order when the server
chooses (or who chooses), the key exchange groups, and the certificate (by fingerprint; the
line names the fields that changed: serial, issuer, subject, key, signature, expiry, else the
fingerprint). The scan time and handshake count are not compared.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ResultFileError, SchemaVersionError
from .scan import SCAN_VERSION
from ..util.files import check_writable, replace_atomic
from ..util import files

MAX_BYTES = 16 * 2**20  # a scan of every suite of every protocol is tens of kB


def save(result: dict, path: Path) -> None:
    """Atomically, into an existing directory, never over a device node, FIFO or symlink."""
    hint = "choose a writable regular file for --save-baseline"
    check_writable(Path(path), what="the baseline", hint=hint)
    replace_atomic(Path(path), json.dumps(result, indent=1), what="the baseline", hint=hint)


def load(path: Path) -> dict:
    path = Path(path)
    text = files.read_text(path, what="baseline", limit=MAX_BYTES, error=ResultFileError,
                           hint="make one with --save-baseline")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ResultFileError(f"baseline {path} is not a readable JSON file ({type(e).__name__})",
                              hint="make a new one with --save-baseline") from None
    if not isinstance(doc, dict) or doc.get("kind") != "encbench-tls-scan":
        raise ResultFileError(f"{path} is not a tls-scan baseline", hint="make one with --save-baseline")
    if doc.get("version") != SCAN_VERSION:
        raise SchemaVersionError(f"baseline {path} has version {doc.get('version')!r}; this encbench reads {SCAN_VERSION}",
                                 hint="make a new one with --save-baseline")
    for key in ("protocols", "suites", "order", "groups"):
        if key not in doc:
            raise ResultFileError(f"baseline {path} lacks {key!r}", hint="make a new one with --save-baseline")
    return doc


def _names(doc: dict, proto: str) -> list[str]:
    return [s["suite"] if isinstance(s, dict) else s for s in doc.get("suites", {}).get(proto, [])]


def _key(c: dict) -> str | None:
    return " ".join(str(x) for x in (c.get("key_type"), c.get("key_bits")) if x) or None


def _short_hex(text: str | None) -> str | None:
    return f"{text[:16]}..." if text and len(text) > 16 else text


# the fields of a certificate a drift line names, in the order a DBA checks them: (name, its value in a scan)
CERTIFICATE_FIELDS = (
    ("serial", lambda c: c.get("serial")),
    ("issuer", lambda c: c.get("issuer")),
    ("subject", lambda c: c.get("subject")),
    ("key", _key),
    ("signature", lambda c: c.get("signature")),
    ("expiry", lambda c: str(c["not_after"])[:10] if c.get("not_after") else None),
)


def certificate_changes(old: dict, new: dict) -> list[str]:
    """One line naming each field of the certificate that changed (serial, issuer, subject, key, signature,
    expiry), the fingerprint when no recorded field tells the certificates apart; [] when it is the same one."""
    if old.get("sha256_fingerprint") == new.get("sha256_fingerprint"):
        return []
    if not old or not new:
        return ["certificate changed: " + ("now presented" if new else "no longer presented")]
    changed = [f"{name} {get(old)} -> {get(new)}" for name, get in CERTIFICATE_FIELDS
               if get(old) is not None and get(new) is not None and get(old) != get(new)]
    if not changed:  # a re-issue with the same recorded fields (or a baseline from before the serial was kept)
        changed = [f"fingerprint {_short_hex(old.get('sha256_fingerprint'))} -> "
                   f"{_short_hex(new.get('sha256_fingerprint'))}"]
    return ["certificate changed: " + "; ".join(changed)]


def diff(baseline: dict, now: dict) -> list[str]:
    """Readable lines, one per change; [] when nothing changed."""
    out = []
    if baseline.get("target") != now.get("target"):
        out.append(f"note: target {baseline.get('target')} -> {now.get('target')} (compared anyway)")
    b, n = set(baseline["protocols"]), set(now["protocols"])
    out += [f"protocol added: {p}" for p in sorted(n - b)] + [f"protocol removed: {p}" for p in sorted(b - n)]
    for proto in sorted(set(baseline["suites"]) | set(now["suites"])):
        old, new = _names(baseline, proto), _names(now, proto)
        out += [f"{proto}: suite added: {s}" for s in new if s not in old]
        out += [f"{proto}: suite removed: {s}" for s in old if s not in new]
        who_b, who_n = baseline["order"].get(proto), now["order"].get(proto)
        if who_b != who_n and who_b and who_n:
            out.append(f"{proto}: the order is now the {who_n}'s choice (was the {who_b}'s)")
        common_old = [s for s in old if s in new]
        common_new = [s for s in new if s in old]
        if who_n == "server" and who_b == "server" and common_old != common_new:
            out.append(f"{proto}: server preference changed: {', '.join(common_old[:4])}... -> "
                       f"{', '.join(common_new[:4])}...")
    bgp = baseline.get("groups_by_protocol") or {baseline.get("groups_protocol"): baseline.get("groups", [])}
    ngp = now.get("groups_by_protocol") or {now.get("groups_protocol"): now.get("groups", [])}
    for proto in sorted(set(bgp) | set(ngp), key=str):
        bg, ng = bgp.get(proto, []), ngp.get(proto, [])
        where = f"{proto}: " if len(bgp) > 1 or len(ngp) > 1 else ""
        out += [f"{where}group added: {g}" for g in ng if g not in bg]
        out += [f"{where}group removed: {g}" for g in bg if g not in ng]
    if baseline.get("direct_tls") is not None and now.get("direct_tls") is not None \
            and baseline["direct_tls"] != now["direct_tls"]:
        out.append(f"direct TLS: {'now accepted' if now['direct_tls'] else 'no longer accepted'}")
    out += certificate_changes(baseline.get("certificate") or {}, now.get("certificate") or {})
    changes = [line for line in out if not line.startswith("note:")]
    return out if changes else []
