"""Imported only in the forkserver (runner._context preloads it): Ctrl-C is ignored there before the
forkserver saves the signal handlers its children start with.

So a worker starts with SIGINT ignored, as worker.py then sets it anyway. Without this, a Ctrl-C sent to
the whole process group in the moment between a worker's fork and its own handler raised KeyboardInterrupt
in multiprocessing's bootstrap, which printed 'Process ForkServerProcess-2:' on the user's terminal.
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
