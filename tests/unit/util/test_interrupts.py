"""util.interrupts: a signal inside code Python can only report on (a weakref callback, __del__) prints nothing."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import signal, weakref, os
from encbench.util import interrupts
interrupts.install()

class Obj:
    pass

def callback(_ref):
    os.kill(os.getpid(), signal.SIGINT)  # the handler raises KeyboardInterrupt inside the callback

o = Obj()
r = weakref.ref(o, callback)
del o  # the callback runs here; Python can only report what it raises
print("stopped" if interrupts.STOP.is_set() else "not stopped")
"""


def test_a_signal_in_a_weakref_callback_prints_no_traceback():
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "stopped"
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr


def test_other_unraisable_errors_are_still_reported():
    script = SCRIPT.replace("os.kill(os.getpid(), signal.SIGINT)", "raise ValueError('boom')")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "ValueError: boom" in res.stderr and res.stdout.strip() == "not stopped"
