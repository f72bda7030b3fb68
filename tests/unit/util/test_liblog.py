"""Library warnings (psycopg's) are one encbench line, and nothing while a signal is handled."""

from __future__ import annotations

import logging

from encbench.util import interrupts, liblog


def test_a_psycopg_warning_is_one_encbench_line(capsys):
    liblog.install()
    liblog.install()  # twice: still one handler
    interrupts.STOP.clear()
    logging.getLogger("psycopg").warning("query cancellation failed: %s", "server closed\nthe connection")
    err = capsys.readouterr().err
    assert err == "encbench: warning: psycopg: query cancellation failed: server closed the connection\n", err


def test_while_a_signal_is_handled_psycopg_says_nothing(capsys):
    liblog.install()
    interrupts.STOP.set()
    try:
        logging.getLogger("psycopg").warning("query cancellation interrupted (%s): closing connection",
                                             "AdminShutdown")
    finally:
        interrupts.STOP.clear()
    assert capsys.readouterr().err == ""
