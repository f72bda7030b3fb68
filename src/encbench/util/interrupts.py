"""Ctrl-C and SIGTERM, handled so that nothing is lost or left running.

The handlers always set STOP. Outside `deferred()` they also raise KeyboardInterrupt at
once (data generation, server start-up: long steps with their own clean-up). Inside it
(while a worker process runs, while a result file is written) they only set the flag:
the runner notices it within a poll interval, stops the worker in order, keeps the
results and cleans up. A second signal inside `deferred()` is just as safe.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time

STOP = threading.Event()
_deferring = 0
_quiet = False


def _handler(signum, frame) -> None:
    STOP.set()
    if _deferring == 0 and not _quiet:
        raise KeyboardInterrupt


def _unraisable(hook_args) -> None:
    """A signal that lands inside code whose exceptions Python can only report (a weakref callback such as
    importlib's module-lock clean-up, a __del__) would print "Exception ignored ... KeyboardInterrupt" with a
    traceback. STOP is set already and the runner acts on it at its next check: nothing to print."""
    if isinstance(hook_args.exc_value, KeyboardInterrupt) and STOP.is_set():
        return
    sys.__unraisablehook__(hook_args)


def install() -> None:
    global _quiet
    _quiet = False
    STOP.clear()
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)
    sys.unraisablehook = _unraisable


def quiet() -> None:
    """The command's work is done (written, cleaned up): from now on a signal only sets STOP.

    Raising KeyboardInterrupt then would only turn a finished run into an interrupted one.
    """
    global _quiet
    _quiet = True


@contextlib.contextmanager
def deferred():
    """Signals only set STOP inside this block; check `raise_if_stopped()` at safe points."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1


# How long a failure that a signal may have caused waits for that signal. A signal to the whole process group (timeout
# -s TERM, systemd, a CI runner) reaches a worker, its clients and the forkserver too: the runner can see a worker die
# before its own handler has run (the handler runs in the main thread, between two bytecodes; systemd signals the
# processes one by one).
SETTLE_S = 1.0


def stopped(settle: float = SETTLE_S) -> bool:
    """After a failure a signal may have caused (a worker that died without a result, a client killed): was this
    process signalled? Waits up to `settle` s for the handler (sleep is interrupted by the signal, the handler runs)."""
    deadline = time.monotonic() + settle
    while not STOP.is_set() and time.monotonic() < deadline:
        time.sleep(0.02)
    return STOP.is_set()


def raise_if_stopped() -> None:
    if STOP.is_set():
        raise KeyboardInterrupt
