"""What libraries log, said the encbench way, or not at all while a signal is being handled.

psycopg logs a warning when an interruption reaches it mid-query ("query cancellation interrupted
(AdminShutdown): closing connection": SIGTERM to the group stops the client and the server at once).
With no handler, Python's last-resort handler prints it bare on stderr, beside encbench's own one line
("encbench: interrupted"). Here such a record is dropped while a signal is handled (interrupts.STOP,
the command's line says what happened) and otherwise printed as one "encbench: warning:" line.
"""

from __future__ import annotations

import logging
import sys

from . import interrupts
from .redact import redact

LIBRARIES = ("psycopg",)  # the loggers of the libraries encbench drives


class _OneLine(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if interrupts.STOP.is_set():
            return
        try:
            text = " ".join(record.getMessage().split())
        except Exception:  # a malformed record: what it says is lost, nothing else
            return
        print(f"encbench: warning: {record.name}: {redact(text)}", file=sys.stderr)


def install() -> None:
    """Route the libraries' warnings through one handler (once per process: main, a worker)."""
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        if not any(isinstance(h, _OneLine) for h in logger.handlers):
            logger.addHandler(_OneLine(logging.WARNING))
        logger.propagate = False
