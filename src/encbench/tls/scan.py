"""`encbench tls-scan`: what TLS a database server accepts, over its own wire protocol.

A TLS scanner for HTTPS cannot talk to a database: PostgreSQL wants an SSLRequest
before the handshake, MariaDB/MySQL a TLS upgrade inside its own handshake. This module
does that preamble on a plain socket, then hands the socket to Python's ssl module with
one protocol offered at a time: what completes is what the server accepts. Suites and
key-exchange groups are found by elimination: offer every one left, remove the one the
server picks, again until no handshake completes; the picks are the ones it accepts (suites
in its order of preference; if the pick follows the client's order instead, the order is
"client's choice"). The groups offered are every group this client's OpenSSL knows, read
from the library at run time (sslctl.library_groups), never a list of our own; the suites,
every TLS 1.2 suite it knows and the TLS 1.3 ones it accepts.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Callable
from ..host import sslctl
from ..engines import tls_scan_engines
from ..errors import BadValueError, EngineUnavailableError, NotADatabaseError
from ..util import urls
from ..util.redact import redact

SCAN_VERSION = 1
PROTOCOLS = (("TLSv1", ssl.TLSVersion.TLSv1), ("TLSv1.1", ssl.TLSVersion.TLSv1_1),
             ("TLSv1.2", ssl.TLSVersion.TLSv1_2), ("TLSv1.3", ssl.TLSVersion.TLSv1_3))
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256",
                "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256")

TIMEOUT_S = 10.0  # seconds, per network wait (connect, the preamble's answer, a handshake)


@dataclass
class Endpoint:
    kind: str  # the wire protocol (Engine.wire_protocol)
    host: str
    port: int
    timeout: float = field(default=TIMEOUT_S, compare=False)  # per network wait
    deadline: float | None = field(default=None, compare=False)  # time.monotonic() by which the whole scan ends
    current: socket.socket | None = field(default=None, compare=False, repr=False)  # the connection open now

    @property
    def label(self) -> str:
        return f"{self.kind}://{self.host}:{self.port}"

    def wait_s(self) -> float:
        """How long the next network wait may take: the timeout, or less when the deadline is nearer; raises
        EngineUnavailableError once the deadline has passed (a target that answers too slowly, or never)."""
        if self.deadline is None:
            return self.timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise EngineUnavailableError(f"{self.label}: the scan did not finish within its time limit",
                                         hint="raise --timeout, or check that the server answers promptly")
        return min(self.timeout, left)

    def cancel(self) -> None:
        """End the scan from another thread (Ctrl-C): its open connection is shut down and its next wait
        raises. A socket already closed is left alone (its descriptor is -1: never another socket's)."""
        self.deadline = 0.0
        sock = self.current
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def parse_target(text: str) -> Endpoint:
    """SCHEME://host:port of an engine tls-scan knows (user, password and database are ignored)."""
    u = urls.split(text, what="target")
    engine = next((e for e in tls_scan_engines() if u.scheme in e.dsn_schemes), None)
    if engine is None or not u.hostname:
        examples = " or ".join(f"{e.dsn_schemes[0]}://db{i}:{e.default_port}"
                               for i, e in enumerate(tls_scan_engines(), 1))
        raise BadValueError(f"{redact(text)!r} is not a {schemes_text()} address", hint=f"e.g. encbench tls-scan {examples}")
    return Endpoint(engine.wire_protocol, u.hostname, engine.default_port if u.port is None else u.port)


# -- the database protocols' TLS preamble: the engines' (Engine.tls_preamble, engines/wire.py) --

def engine_of(kind: str):
    """The engine that speaks wire protocol `kind` (an Endpoint's, a scan file's "engine")."""
    return next(e for e in tls_scan_engines() if e.wire_protocol == kind)


def schemes_text() -> str:
    """'postgresql:// or mysql://', from the registry."""
    return " or ".join(f"{e.dsn_schemes[0]}://" for e in tls_scan_engines())


def _connect(ep: Endpoint) -> socket.socket:
    wait = ep.wait_s()
    try:
        ep.current = socket.create_connection((ep.host, ep.port), timeout=wait)
        return ep.current
    except socket.timeout:
        raise EngineUnavailableError(f"cannot reach {ep.label}: no answer to the connection within {round(wait, 1):g} s",
                                     hint="check the host and port, and that the server listens there") from None
    except OSError as e:
        raise EngineUnavailableError(f"cannot reach {ep.label}: {e.strerror or e}",
                                     hint="check the host and port, and that the server listens there") from None


# -- one handshake with exactly what we offer -------------------------------------------------

@dataclass
class Offer:
    protocol: str | None = None  # pin one protocol version
    suites12: str | None = None  # OpenSSL cipher string for TLS <= 1.2, in order
    suites13: str | None = None  # TLS 1.3 suites, in order
    groups: str | None = None  # key-exchange groups, in order (OpenSSL's colon-separated list)


def _context(offer: Offer) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_ciphers((offer.suites12 or "ALL:COMPLEMENTOFALL") + ":@SECLEVEL=0")  # old protocols too: we only look
    if offer.protocol:
        version = dict(PROTOCOLS)[offer.protocol]
        ctx.minimum_version = ctx.maximum_version = version
    else:
        ctx.minimum_version = ssl.TLSVersion.TLSv1
    if offer.suites13 and not sslctl.set_tls13_suites(ctx, offer.suites13):
        raise BadValueError(f"this client's OpenSSL does not know the TLS 1.3 suites {offer.suites13}")
    groups = offer.groups or sslctl.every_group()  # no group named: all of them, as with the suites
    if groups and not sslctl.set_groups(ctx, groups):
        raise ValueError(f"unknown group in {groups}")
    return ctx


@dataclass
class Handshake:
    ok: bool
    protocol: str | None = None
    cipher: str | None = None
    bits: int | None = None
    cert_der: bytes | None = None
    error: str | None = None
    group: str | None = None  # the key-exchange group used (None: the library did not say)


def handshake(ep: Endpoint, offer: Offer) -> Handshake:
    """One connection: the protocol's preamble, then a TLS handshake offering only `offer`."""
    try:
        ctx = _context(offer)
    except ValueError as e:
        return Handshake(False, error=str(e))
    sock = _connect(ep)
    try:
        try:
            engine_of(ep.kind).tls_preamble(sock, ep.label)
        except socket.timeout:
            raise NotADatabaseError(f"{ep.label}: no {ep.kind} protocol answer within "
                                    f"{round(sock.gettimeout() or ep.timeout, 1):g} s",
                                    hint=f"check the port and the scheme ({schemes_text()})") from None
        sock.settimeout(ep.wait_s())
        try:
            tls = ctx.wrap_socket(sock, server_hostname=None, do_handshake_on_connect=True)
        except (ssl.SSLError, ConnectionError, OSError) as e:
            return Handshake(False, error=str(e).splitlines()[0] if str(e) else type(e).__name__)
        name, proto, bits = tls.cipher()
        out = Handshake(True, protocol=proto, cipher=name, bits=bits, cert_der=tls.getpeercert(binary_form=True),
                        group=sslctl.negotiated_group(tls))
        tls.close()
        return out
    except (ConnectionError, socket.timeout) as e:
        raise EngineUnavailableError(f"{ep.label} closed the connection before TLS could start: {e}") from None
    finally:
        sock.close()


def direct_tls(ep: Endpoint, alpn: str) -> bool:
    """TLS straight away, without the protocol's preamble, under the ALPN name `alpn` (PostgreSQL 17+:
    'postgresql', Engine.direct_tls_alpn)."""
    ctx = _context(Offer())
    ctx.set_alpn_protocols([alpn])
    sock = _connect(ep)
    try:
        tls = ctx.wrap_socket(sock, server_hostname=None, do_handshake_on_connect=True)
        ok = tls.selected_alpn_protocol() == alpn
        tls.close()
        return ok
    except (ssl.SSLError, ConnectionError, OSError):
        return False
    finally:
        sock.close()


# -- what this client can offer ---------------------------------------------------------------

def client_tls12_suites() -> list[str]:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.set_ciphers("ALL:COMPLEMENTOFALL:@SECLEVEL=0")
    return [c["name"] for c in ctx.get_ciphers() if c["protocol"] != "TLSv1.3"]


# -- grading ------------------------------------------------------------------------------------

def grade(suite: str, protocol: str) -> dict:
    """A: forward secrecy + AEAD; B: forward secrecy, CBC with SHA-2; C: SHA-1 MAC, no forward
    secrecy, or a protocol below TLS 1.2; F: broken (NULL, export, RC4, DES/3DES, anonymous)."""
    s = suite.upper()
    tls13 = protocol == "TLSv1.3" or s.startswith("TLS_")
    fs = tls13 or s.startswith(("ECDHE", "DHE", "EDH"))
    aead = tls13 or any(x in s for x in ("GCM", "CHACHA20", "CCM"))
    sha1 = not aead and (s.endswith("-SHA") or s.endswith("_SHA"))
    broken = any(x in s for x in ("NULL", "EXP", "RC4", "DES", "ANON", "ADH", "AECDH", "MD5"))
    reasons = []
    if broken:
        letter = "F"
        reasons.append("broken primitive")
    elif not fs or sha1 or protocol in ("TLSv1", "TLSv1.1"):
        letter = "C"
    elif not aead:
        letter = "B"
    else:
        letter = "A"
    if not fs:
        reasons.append("no forward secrecy")
    reasons.append("AEAD" if aead else "CBC")
    if sha1:
        reasons.append("SHA-1 MAC")
    if protocol in ("TLSv1", "TLSv1.1"):
        reasons.append(f"{protocol} is obsolete")
    return {"grade": letter, "forward_secrecy": fs, "aead": aead, "sha1": sha1, "notes": reasons}


def certificate(der: bytes | None) -> dict | None:
    if not der:
        return None
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

    cert = x509.load_der_x509_certificate(der)
    key = cert.public_key()
    kind, size = "other", None
    if isinstance(key, rsa.RSAPublicKey):
        kind, size = "RSA", key.key_size
    elif isinstance(key, ec.EllipticCurvePublicKey):
        kind, size = f"EC {key.curve.name}", key.curve.key_size
    elif isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        kind = type(key).__name__.replace("PublicKey", "")
    not_after = cert.not_valid_after_utc
    return {
        "subject": cert.subject.rfc4514_string(), "issuer": cert.issuer.rfc4514_string(),
        "key_type": kind, "key_bits": size,
        "signature": cert.signature_hash_algorithm.name if cert.signature_hash_algorithm else "none",
        "not_after": not_after.isoformat(),
        "days_left": (not_after - datetime.datetime.now(datetime.timezone.utc)).days,
        "self_signed": cert.issuer == cert.subject,
        "sha256_fingerprint": cert.fingerprint(hashes.SHA256()).hex(),
        "serial": format(cert.serial_number, "x"),
    }


# -- the scan ---------------------------------------------------------------------------------

@dataclass
class ScanProgress:
    report: Callable[[str], None] = lambda msg: None
    handshakes: int = 0


def _eliminate(ep: Endpoint, candidates: list[str], make: Callable[[list[str]], Offer],
               pick: Callable[[Handshake], str | None], p: ScanProgress, what: str) -> tuple[list[str], list[str]]:
    """Offer every candidate left, remove the one the server picks (`pick` names it from the handshake), again,
    until no handshake completes (as sslscan and testssl.sh do: one handshake per accepted candidate plus one,
    instead of one per candidate). (the picks in order, the candidates left unread): unread are those still
    offered when a handshake completed on a pick that `pick` could not name among them ([] otherwise)."""
    order, left = [], list(candidates)
    while left:
        p.report(f"{what}: {len(order)} accepted, offering {len(left)}")
        hs = handshake(ep, make(left))
        p.handshakes += 1
        if not hs.ok:
            return order, []
        chosen = pick(hs)
        if chosen not in left:
            return order, left
        order.append(chosen)
        left.remove(chosen)
    return order, []


def _accepted_in_order(ep: Endpoint, candidates: list[str], make: Callable[[list[str]], Offer],
                       p: ScanProgress) -> tuple[list[str], str]:
    """(accepted suites in order, 'server' | 'client' | 'none'), by elimination. The picks are the server's
    order of preference, or the offer's when the server follows the client: one more handshake offering the
    accepted suites reversed tells which (the server's choice picks its first again; the client's, the
    offer's first)."""
    order, _ = _eliminate(ep, candidates, make, lambda hs: hs.cipher, p, "suites")
    if len(order) < 2:
        return order, "server" if order else "none"
    reverse = handshake(ep, make(list(reversed(order))))
    p.handshakes += 1
    return order, "client" if reverse.ok and reverse.cipher == order[-1] else "server"


def client_tls13_suites() -> list[str]:
    """The TLS 1.3 suites this client's OpenSSL can offer (each set alone on a context: no network)."""
    return [s for s in TLS13_SUITES if sslctl.set_tls13_suites(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), s)]


def client_groups(protocol: str) -> list[str]:
    """The key-exchange groups this client's OpenSSL can offer under `protocol`, in its own order (no network):
    in OpenSSL 3.0, the finite-field ones (ffdhe*) for TLS 1.3 only, most elliptic curves for TLS 1.2 and below."""
    version = dict(PROTOCOLS)[protocol]
    return [g.name for g in sslctl.library_groups() if g.usable_in(version)]


def _group_offer(protocol: str, groups: list[str]) -> Offer:
    """Exactly `groups`; for TLS 1.2 ECDHE suites only, so that a DHE or RSA key exchange cannot pass for a group."""
    return Offer(protocol=protocol, groups=":".join(groups), suites12="ECDHE" if protocol == "TLSv1.2" else None)


def _on_a_group(protocol: str, hs: Handshake) -> bool:
    """A completed handshake whose key exchange used a group (TLS 1.2: an ECDHE suite)."""
    return hs.ok and (protocol != "TLSv1.2" or (hs.cipher or "").startswith("ECDHE"))


def accepted_groups(ep: Endpoint, protocol: str, p: ScanProgress) -> list[str]:
    """The groups of client_groups(protocol) the server accepts under `protocol`, in the library's order: by
    elimination; if a handshake completes and the library does not say on which group, the groups left are
    offered one at a time."""
    candidates = client_groups(protocol)
    found, unread = _eliminate(ep, candidates, lambda left: _group_offer(protocol, left),
                               lambda hs: hs.group if _on_a_group(protocol, hs) else None, p, f"{protocol} groups")
    for g in unread:
        p.report(f"{protocol} group {g}")
        hs = handshake(ep, _group_offer(protocol, [g]))
        p.handshakes += 1
        if _on_a_group(protocol, hs):
            found.append(g)
    return [g for g in candidates if g in found]


def scan(ep: Endpoint, progress: ScanProgress | None = None) -> dict:
    """Everything the server accepts; raises EngineUnavailableError when it cannot be scanned."""
    p = progress or ScanProgress()
    first = handshake(ep, Offer())  # whatever both sides like best: proves TLS works at all
    p.handshakes += 1
    if not first.ok:
        raise EngineUnavailableError(f"{ep.label}: the TLS handshake failed: {first.error}",
                                     hint="the server offers TLS but no handshake completes with this client")
    protocols = []
    for name, _ in PROTOCOLS:
        p.report(f"protocol {name}")
        hs = handshake(ep, Offer(protocol=name))
        p.handshakes += 1
        if hs.ok:
            protocols.append(name)
    suites: dict[str, list[str]] = {}
    order: dict[str, str] = {}
    pre12 = [x for x in protocols if x != "TLSv1.3"]
    if pre12:
        top = pre12[-1]  # suites are listed for the highest protocol below 1.3
        suites[top], order[top] = _accepted_in_order(
            ep, client_tls12_suites(), lambda s, t=top: Offer(protocol=t, suites12=":".join(s)), p)
    if "TLSv1.3" in protocols:
        suites["TLSv1.3"], order["TLSv1.3"] = _accepted_in_order(
            ep, client_tls13_suites(), lambda s: Offer(protocol="TLSv1.3", suites13=":".join(s)), p)
    groups_by_protocol: dict[str, list[str]] = {}
    for proto in [x for x in ("TLSv1.2", "TLSv1.3") if x in protocols]:  # TLS 1.3 groups apart from TLS 1.2 ones
        groups_by_protocol[proto] = accepted_groups(ep, proto, p)
    top_proto = protocols[-1] if protocols else None
    groups = groups_by_protocol.get(top_proto, [])
    alpn = engine_of(ep.kind).direct_tls_alpn
    direct = direct_tls(ep, alpn) if alpn else None
    graded = {proto: [dict(suite=s, **grade(s, proto)) for s in names] for proto, names in suites.items()}
    return {
        "kind": "encbench-tls-scan", "version": SCAN_VERSION, "target": ep.label, "engine": ep.kind,
        "scanned_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "client_library": ssl.OPENSSL_VERSION,
        "protocols": protocols,
        "suites": graded, "order": order,
        "groups": groups, "groups_protocol": top_proto, "groups_by_protocol": groups_by_protocol,
        "direct_tls": direct,
        "default": {"protocol": first.protocol, "cipher": first.cipher, "bits": first.bits},
        "certificate": certificate(first.cert_der),
        "handshakes": p.handshakes,
        "limits": [f"suites are those this client's OpenSSL knows ({ssl.OPENSSL_VERSION}); "
                   "suites below TLS 1.2 are listed for the highest such protocol only",
                   _groups_limit(groups_by_protocol)],
    }


def _groups_limit(groups_by_protocol: dict) -> str:
    """What the groups were chosen from: every group this client's OpenSSL knows for each protocol scanned."""
    if not sslctl.library_groups():
        return "this client's OpenSSL does not list its key-exchange groups (before OpenSSL 3.0): none were offered"
    return ("key-exchange groups are every one this client's OpenSSL knows for the protocol: "
            + ", ".join(f"{len(client_groups(proto))} for {proto}" for proto in groups_by_protocol)
            if groups_by_protocol else "key-exchange groups are scanned for TLS 1.2 and TLS 1.3 only")


def summary_lines(result: dict) -> list[str]:
    out = [f"{result['target']}: protocols {', '.join(result['protocols']) or 'none'}; "
           f"by default {result['default']['protocol']} {result['default']['cipher']}"]
    for proto, suites in result["suites"].items():
        how = {"server": "server's order of preference", "client": "client's choice", "none": ""}[result["order"][proto]]
        out.append(f"{proto}: {len(suites)} suites ({how})")
        for s in suites:
            out.append(f"  {s['grade']}  {s['suite']:<34} {', '.join(s['notes'])}")
    for proto, found in (result.get("groups_by_protocol") or {result["groups_protocol"]: result["groups"]}).items():
        out.append(f"key exchange groups ({proto}): {', '.join(found) or 'none found'}")
    if result.get("direct_tls") is not None:
        out.append("direct TLS (PostgreSQL 17+, no SSLRequest): " + ("accepted" if result["direct_tls"] else "not offered"))
    c = result.get("certificate")
    if c:
        out.append(f"certificate: {c['key_type']} {c['key_bits'] or ''} bits, signed {c['signature']}, "
                   f"expires {c['not_after'][:10]} ({c['days_left']} days){', self-signed' if c['self_signed'] else ''}; "
                   f"{c['subject']}")
    grades = [s["grade"] for ss in result["suites"].values() for s in ss]
    worst = max(grades, default="-", key=lambda g: "ABCF".index(g) if g in "ABCF" else -1)
    weak = [s["suite"] for ss in result["suites"].values() for s in ss if s["grade"] in ("C", "F")]
    verdict = (f"summary: {len(grades)} suites accepted, worst grade {worst}"
               + (f"; weak ones a client could end up on: {', '.join(weak)}" if weak else "; every suite is strong"))
    if any(p in result["protocols"] for p in ("TLSv1", "TLSv1.1")):
        verdict += "; obsolete protocols accepted (TLS 1.0/1.1)"
    out.append(verdict)
    return out
