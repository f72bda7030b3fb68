"""A signal to the whole process group (timeout -s TERM, systemd, a CI runner) ends the worker (and the forkserver:
'exit code 255') a moment before the runner's own handler runs: that is an interruption, never 'the worker process
died without a result' (exit 11)."""

from __future__ import annotations

import threading

import pytest

from encbench.errors import RunFailedError
from encbench.lab import runner
from encbench.util import interrupts


class _DeadWorker:
    """A worker that died without a word: the forkserver, killed by the same signal, reports exit code 255."""
    exitcode = 255

    def start(self):
        pass

    def is_alive(self):
        return False

    def terminate(self):
        pass

    def kill(self):
        pass

    def join(self, timeout=None):
        pass


class _ClosedPipe:
    def poll(self, timeout=0):
        return True  # EOF is readable

    def recv(self):
        raise EOFError

    def close(self):
        pass


class _Context:
    def Pipe(self, duplex=False):  # noqa: N802 (multiprocessing's name)
        return _ClosedPipe(), _ClosedPipe()

    def Process(self, target=None, args=(), daemon=None):  # noqa: N802
        return _DeadWorker()


@pytest.fixture
def stop_flag():
    interrupts.STOP.clear()
    yield interrupts.STOP
    interrupts.STOP.clear()


def test_a_worker_ended_by_the_groups_signal_is_an_interruption(stop_flag):
    late = threading.Timer(0.2, stop_flag.set)  # the runner's handler runs only after it saw the worker gone
    late.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run_in_fresh_process(_Context(), {})
    finally:
        late.cancel()


def test_a_worker_that_died_alone_is_still_a_failed_run(stop_flag):
    with pytest.raises(RunFailedError, match=r"the worker process died \(exit code 255\) without a result"):
        runner.run_in_fresh_process(_Context(), {})


def test_stopped_waits_for_a_late_signal_only_up_to_its_settle_time(stop_flag):
    assert not interrupts.stopped(settle=0.05)
    threading.Timer(0.05, stop_flag.set).start()
    assert interrupts.stopped(settle=2.0)
