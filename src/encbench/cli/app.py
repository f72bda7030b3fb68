"""main(), the process entry point, and the error contract of every command.

Every user error is an EncbenchError: one line on stderr, a distinct exit code
(errors.EXIT_CODES), no traceback (unless --debug).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import errors
from ..lab import reclaim
from ..util import interrupts, liblog, owners
from ..util.redact import redact
from .commands import BY_NAME
from .parser import build_parser, command_named


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    interrupts.install()
    liblog.install()
    try:
        return _main(argv, debug)
    finally:
        interrupts.quiet()  # the work is done: a late signal must not turn it into an interruption


def _main(argv: list[str], debug: bool) -> int:
    try:
        args = build_parser(only=command_named(argv) or "").parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 0
        command = BY_NAME[args.command]
        if not command.makes:
            return command(args, argv)
        reclaim.claim(_data_dir(args))  # what killed commands left: stopped, removed, named in one line
        owners.enable()  # from here on, what this command makes is recorded before it exists
        try:
            return command(args, argv)
        finally:
            owners.finish()  # cleaned up (normal end, error or interrupt): nothing of ours is left to reclaim
    except errors.EncbenchError as e:
        if interrupts.STOP.is_set():  # a signal to the whole group ended a tool or client this error reports
            print("encbench: interrupted", file=sys.stderr)
            return errors.EXIT_INTERRUPTED
        print(f"encbench: error: {redact(e.one_line())}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("encbench: interrupted", file=sys.stderr)
        return errors.EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: still one line unless --debug
        if interrupts.STOP.is_set():  # a signal landed inside an import or a library, which turned it into this
            print("encbench: interrupted", file=sys.stderr)
            return errors.EXIT_INTERRUPTED
        if debug:
            raise
        print(f"encbench: internal error: {type(e).__name__}: {redact(str(e))} (re-run with --debug for a traceback)",
              file=sys.stderr)
        return 1


def _data_dir(args) -> Path | None:
    """The data directory whose scratch-* directories a killed run may have left (None: the command has none)."""
    if not hasattr(args, "data_dir"):
        return None
    from .defaults import data_dir_default

    return Path(args.data_dir) if args.data_dir else data_dir_default()


def entry() -> None:
    """The `encbench` command: main(), then exit without a late signal undoing a finished run.

    Once main() has returned, everything is written and cleaned up, and the handlers no
    longer raise (interrupts.quiet). Python's shutdown then puts the default handlers back,
    so a SIGINT/SIGTERM arriving in those last milliseconds (to any thread) would kill the
    process with the signal's status instead of main()'s: ignore both from here on.
    """
    import signal

    try:
        code = main()
    except KeyboardInterrupt:  # raised in main()'s own error handling, before it went quiet
        code = errors.EXIT_INTERRUPTED
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)
