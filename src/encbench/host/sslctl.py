"""What Python's ssl module cannot set on a client context, set through OpenSSL itself.

Python 3.11 has no way to choose TLS 1.3 suites or key-exchange groups, to list the groups
its OpenSSL knows, or to tell which group a handshake used. Choosing is one OpenSSL call on
the context's SSL_CTX, which is the first field after the object header of an
ssl.SSLContext; the functions are looked up through the _ssl module, which links the same
libssl (and libcrypto). Every caller checks the effect (the context's cipher list, or the
handshake that follows): a layout change can never pass silently. The groups are what
OpenSSL's providers declare (their TLS-GROUP capability: what `openssl list -tls-groups`
prints from OpenSSL 3.5 on); the group of a handshake is read from the SSL of the socket
only once its neighbouring fields prove the layout.
"""

from __future__ import annotations

import ctypes
import functools
import ssl
from dataclasses import dataclass

SSL_CTRL_SET_GROUPS_LIST = 92


def _handle(ctx: ssl.SSLContext) -> int | None:
    return ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value


def set_tls13_suites(ctx: ssl.SSLContext, suites: str) -> bool:
    """SSL_CTX_set_ciphersuites; True when OpenSSL took it."""
    try:
        fn = ctypes.CDLL(ssl._ssl.__file__).SSL_CTX_set_ciphersuites
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_int
        handle = _handle(ctx)
        return bool(handle) and fn(handle, suites.encode()) == 1
    except (OSError, AttributeError, ValueError):
        return False


def set_groups(ctx: ssl.SSLContext, groups: str) -> bool:
    """SSL_CTX_set1_groups_list (a macro over SSL_CTX_ctrl); True when OpenSSL took it."""
    try:
        fn = ctypes.CDLL(ssl._ssl.__file__).SSL_CTX_ctrl
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_char_p], ctypes.c_long
        handle = _handle(ctx)
        return bool(handle) and fn(handle, SSL_CTRL_SET_GROUPS_LIST, 0, groups.encode()) == 1
    except (OSError, AttributeError, ValueError):
        return False


# -- the key-exchange groups this OpenSSL knows, and the one a handshake used ----------------------

SSL_CTRL_GET_NEGOTIATED_GROUP = 134


@dataclass(frozen=True)
class Group:
    """A key-exchange group as this OpenSSL's providers declare it (their TLS-GROUP capability)."""

    name: str  # OpenSSL's own name of it: prime256v1, X25519, ffdhe2048 (what tls-scan reports)
    aliases: tuple[str, ...]  # the names it goes by in TLS as well: secp256r1, P-256, x25519
    min_tls: int  # the protocol versions it serves, as on the wire (ssl.TLSVersion): 0x0301 TLS 1.0 ...
    max_tls: int  # ... 0x0304 TLS 1.3; 0: no upper bound

    def usable_in(self, version: int) -> bool:
        return self.min_tls <= version and (not self.max_tls or version <= self.max_tls)


class _Param(ctypes.Structure):  # OSSL_PARAM
    _fields_ = [("key", ctypes.c_char_p), ("data_type", ctypes.c_uint), ("data", ctypes.c_void_p),
                ("data_size", ctypes.c_size_t), ("return_size", ctypes.c_size_t)]


_CAPABILITY_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Param), ctypes.c_void_p)
_PROVIDER_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


@functools.cache
def _libssl():
    """_ssl's own libssl (and, through it, its libcrypto): the library the scan's handshakes run in."""
    return ctypes.CDLL(ssl._ssl.__file__)


def _declared_groups(lib) -> list[dict]:
    """Every TLS-GROUP entry of every provider loaded (aliases are entries of their own), as OpenSSL itself
    reads them when it makes a context (SSL_CTX_new: OSSL_PROVIDER_do_all + OSSL_PROVIDER_get_capabilities)."""
    lib.OSSL_PROVIDER_do_all.argtypes = [ctypes.c_void_p, _PROVIDER_CB, ctypes.c_void_p]
    lib.OSSL_PROVIDER_get_capabilities.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPABILITY_CB, ctypes.c_void_p]
    lib.OSSL_PARAM_locate_const.argtypes = [ctypes.POINTER(_Param), ctypes.c_char_p]
    lib.OSSL_PARAM_locate_const.restype = ctypes.POINTER(_Param)
    lib.OSSL_PARAM_get_utf8_string_ptr.argtypes = [ctypes.POINTER(_Param), ctypes.POINTER(ctypes.c_char_p)]
    lib.OSSL_PARAM_get_uint.argtypes = [ctypes.POINTER(_Param), ctypes.POINTER(ctypes.c_uint)]
    out: list[dict] = []

    def text(params, key: bytes) -> str | None:
        p, value = lib.OSSL_PARAM_locate_const(params, key), ctypes.c_char_p()
        return value.value.decode() if p and lib.OSSL_PARAM_get_utf8_string_ptr(p, ctypes.byref(value)) else None

    def number(params, key: bytes) -> int | None:
        p, value = lib.OSSL_PARAM_locate_const(params, key), ctypes.c_uint()
        return value.value if p and lib.OSSL_PARAM_get_uint(p, ctypes.byref(value)) else None

    def capability(params, _arg) -> int:
        try:
            out.append({"name": text(params, b"tls-group-name"), "internal": text(params, b"tls-group-name-internal"),
                        "id": number(params, b"tls-group-id"), "min_tls": number(params, b"tls-min-tls"),
                        "max_tls": number(params, b"tls-max-tls")})
            return 1
        except Exception:  # noqa: BLE001 - never let an exception cross OpenSSL's stack
            return 0

    on_capability = _CAPABILITY_CB(capability)

    def provider(prov, _arg) -> int:
        lib.OSSL_PROVIDER_get_capabilities(prov, b"TLS-GROUP", on_capability, None)
        return 1

    ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # makes OpenSSL load its providers, as every scan context does
    lib.OSSL_PROVIDER_do_all(None, _PROVIDER_CB(provider), None)
    return out


@functools.cache
def library_groups() -> tuple[Group, ...]:
    """Every key-exchange group this client's OpenSSL knows, in its own order (one per group, its aliases
    folded in), each one a context accepts alone; () when the library cannot tell (OpenSSL before 3.0)."""
    try:
        lib = _libssl()
        entries = _declared_groups(lib)
    except (OSError, AttributeError):
        return ()
    by_id: dict[int, dict] = {}
    for e in entries:
        if None in (e["name"], e["internal"], e["id"], e["min_tls"], e["max_tls"]):
            continue
        g = by_id.setdefault(e["id"], dict(e, aliases=[]))
        g["aliases"] += [n for n in (e["name"],) if n != g["internal"] and n not in g["aliases"]]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return tuple(Group(g["internal"], tuple(g["aliases"]), g["min_tls"], g["max_tls"]) for g in by_id.values()
                 if set_groups(ctx, g["internal"]))


def every_group() -> str | None:
    """Every key-exchange group this client's OpenSSL knows, those TLS 1.3 can use first (its key share goes to
    the first of them); None when the library cannot list them (its default groups are offered then)."""
    groups = library_groups()
    tls13 = [g.name for g in groups if g.usable_in(ssl.TLSVersion.TLSv1_3)]
    return ":".join(tls13 + [g.name for g in groups if g.name not in tls13]) or None


def negotiated_group(tls: ssl.SSLSocket) -> str | None:
    """The key-exchange group a completed handshake used (SSL_get_negotiated_group, a macro over SSL_ctrl), by
    its library_groups() name; None when it cannot be read. The SSL pointer is the field after the socket's
    weakref in _ssl's socket object; it is used only when the field after it is that object's context and
    OpenSSL says the SSL belongs to that context's SSL_CTX."""
    try:
        obj = tls._sslobj
        word = ctypes.sizeof(ctypes.c_void_p)
        base = id(obj) + object.__basicsize__
        handle = ctypes.c_void_p.from_address(base + word).value
        if not handle or ctypes.c_void_p.from_address(base + 2 * word).value != id(obj.context):
            return None
        lib = _libssl()
        lib.SSL_get_SSL_CTX.argtypes, lib.SSL_get_SSL_CTX.restype = [ctypes.c_void_p], ctypes.c_void_p
        if lib.SSL_get_SSL_CTX(handle) != _handle(obj.context):
            return None
        lib.SSL_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
        lib.SSL_ctrl.restype = ctypes.c_long
        lib.SSL_group_to_name.argtypes, lib.SSL_group_to_name.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_char_p
        name = lib.SSL_group_to_name(handle, lib.SSL_ctrl(handle, SSL_CTRL_GET_NEGOTIATED_GROUP, 0, None))
    except (OSError, AttributeError, ValueError):
        return None
    if not name:
        return None
    name = name.decode()
    return next((g.name for g in library_groups() if name == g.name or name in g.aliases), name)


# -- can a client library offer a suite at all -----------------------------------------------------

SSL_CTRL_SET_MIN_PROTO_VERSION, SSL_CTRL_SET_MAX_PROTO_VERSION = 123, 124
_WIRE_VERSION = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def offers(libssl: str, protocol: str, suite: str) -> bool | None:
    """Would a client of the libssl at `libssl` (a path) put `suite` in its ClientHello for `protocol`, at that
    library's own default security level? None when the library cannot be asked. A scan offers every suite at
    level 0; a client may not: psycopg's bundled OpenSSL 3.5 keeps the CCM8 suites (64-bit tags) below its
    default level, where the server's OpenSSL 3.0 accepts them ("no ciphers available" at connect)."""
    try:
        lib = ctypes.CDLL(libssl)
        lib.TLS_client_method.restype = ctypes.c_void_p
        lib.SSL_CTX_new.argtypes, lib.SSL_CTX_new.restype = [ctypes.c_void_p], ctypes.c_void_p
        lib.SSL_CTX_free.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
        lib.SSL_CTX_ctrl.restype = ctypes.c_long
        lib.SSL_CTX_set_cipher_list.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.SSL_CTX_set_ciphersuites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.SSL_new.argtypes, lib.SSL_new.restype = [ctypes.c_void_p], ctypes.c_void_p
        lib.SSL_free.argtypes = [ctypes.c_void_p]
        lib.SSL_get1_supported_ciphers.argtypes = [ctypes.c_void_p]
        lib.SSL_get1_supported_ciphers.restype = ctypes.c_void_p
        lib.OPENSSL_sk_num.argtypes, lib.OPENSSL_sk_free.argtypes = [ctypes.c_void_p], [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    ctx = lib.SSL_CTX_new(lib.TLS_client_method())
    if not ctx:
        return None
    ssl_ = None
    try:
        version = _WIRE_VERSION[protocol]
        for ctrl in (SSL_CTRL_SET_MIN_PROTO_VERSION, SSL_CTRL_SET_MAX_PROTO_VERSION):
            lib.SSL_CTX_ctrl(ctx, ctrl, version, None)
        took = (lib.SSL_CTX_set_ciphersuites(ctx, suite.encode()) if protocol == "TLSv1.3"
                else lib.SSL_CTX_set_cipher_list(ctx, suite.encode()))
        if took != 1:
            return False  # the library does not know the suite
        ssl_ = lib.SSL_new(ctx)
        stack = lib.SSL_get1_supported_ciphers(ssl_) if ssl_ else None
        if not stack:
            return False  # nothing it would offer (the stack is NULL when empty)
        count = lib.OPENSSL_sk_num(stack)
        lib.OPENSSL_sk_free(stack)
        return count > 0
    finally:
        if ssl_:
            lib.SSL_free(ssl_)
        lib.SSL_CTX_free(ctx)
