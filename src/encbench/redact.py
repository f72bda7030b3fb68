"""Keeping secrets out of result files, reports and logs (stored as <hidden>)."""

from __future__ import annotations

import re

HIDDEN = "<hidden>"
_URI_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]*)(?P<tail>@)")
_KV_PASSWORD = re.compile(r"(?P<head>\b(?:password|passwd|sslpassword)\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|\S+)",
                          re.IGNORECASE)


def redact(text: str) -> str:
    """Hide passwords in connection strings (URIs and key=value) and command lines."""
    text = _URI_PASSWORD.sub(lambda m: f"{m['head']}{HIDDEN}{m['tail']}", text)
    return _KV_PASSWORD.sub(lambda m: f"{m['head']}{HIDDEN}", text)
