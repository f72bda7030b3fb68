"""What Python's ssl module cannot set on a client context, set through OpenSSL itself.

Python 3.11 has no way to choose TLS 1.3 suites or key-exchange groups. Both are one
OpenSSL call on the context's SSL_CTX, which is the first field after the object header
of an ssl.SSLContext; the functions are looked up through the _ssl module, which links
the same libssl. Every caller checks the effect (the context's cipher list, or the
handshake that follows): a layout change can never pass silently.
"""

from __future__ import annotations

import ctypes
import ssl

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
