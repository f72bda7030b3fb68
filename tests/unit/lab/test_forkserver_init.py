"""A worker forked by the runner's forkserver starts with Ctrl-C ignored (before its own handler is set)."""

import signal

from encbench.lab import runner


def _sigint_handler_at_start(q) -> None:
    q.put(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)


def test_a_worker_starts_with_sigint_ignored():
    ctx = runner._context()
    q = ctx.Queue()
    p = ctx.Process(target=_sigint_handler_at_start, args=(q,))
    p.start()
    try:
        assert q.get(timeout=60) is True
    finally:
        p.join(60)
    assert p.exitcode == 0
