"""Imported only in the forkserver (runner._context preloads it) and in the metered workers' server (meterfork):
Ctrl-C is ignored there before the forkserver saves the signal handlers its children start with, and the process
adopts the orphans of its workers.

So a worker starts with SIGINT ignored, as worker.py then sets it anyway. Without this, a Ctrl-C sent to
the whole process group in the moment between a worker's fork and its own handler raised KeyboardInterrupt
in multiprocessing's bootstrap, which printed 'Process ForkServerProcess-2:' on the user's terminal.

A worker that restarts a private server (a cold MariaDB buffer pool, PostgreSQL's empty shared_buffers) is that
server's parent; when the worker exits, the kernel hands the server to the nearest ancestor that is a child
subreaper (PR_SET_CHILD_SUBREAPER), else to init. This process is one, so the server stays in encbench's process
tree, where the run context (lab/runctx.own_cpu_s) counts its CPU as encbench's own, and when it is stopped it is
reaped here (multiprocessing's forkserver and meterfork.serve reap any child: waitpid(-1)), its CPU then in this
process's children's times. Without it the restarted server's CPU was charged to "other processes" (issue 30).
"""

import signal
import warnings

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def adopt_orphans() -> bool:
    """Make this process a child subreaper (Linux 3.4+); False where the call is not available."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: orphans go to init, as before
        return False


signal.signal(signal.SIGINT, signal.SIG_IGN)
adopt_orphans()
# the forkserver reaps an adopted server as "unexpected": what it warns of is the point of the adoption
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid",
                        module="multiprocessing.forkserver")
