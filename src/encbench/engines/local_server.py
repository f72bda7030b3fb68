"""Pieces shared by the private servers encbench starts (PostgreSQL, MariaDB)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from ..errors import EngineUnavailableError


def unprivileged_user(preferred: str) -> tuple[str, int, int] | None:
    """(name, uid, gid) to run a server as when we are root (it refuses root); None otherwise."""
    if os.geteuid() != 0:
        return None
    for name in (preferred, "nobody"):
        try:
            pw = pwd.getpwnam(name)
            return name, pw.pw_uid, pw.pw_gid
        except KeyError:
            continue
    raise EngineUnavailableError(f"running as root and no unprivileged user ({preferred}, nobody) to run the server as",
                                 hint=f"create a '{preferred}' user or run encbench as an ordinary user")


def last_log_line(path: Path, marks: tuple[str, ...] = ("FATAL", "ERROR")) -> str:
    """The last error line of a server log (else its last line): what a start-up failure says."""
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    errors = [ln for ln in lines if any(m in ln for m in marks)]
    return (errors or lines or ["empty log"])[-1].strip()
