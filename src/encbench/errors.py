"""One exception hierarchy, mapped to exit codes in one place (see docs/RESULTS.md).

Every error a user can cause is an EncbenchError: the CLI prints its message on one
line to stderr and exits with its code, never with a traceback.
"""

from __future__ import annotations


class EncbenchError(Exception):
    """Base class: a clear one-line message and a distinct exit code."""

    exit_code = 1
    hint: str = ""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint or type(self).hint

    def __reduce__(self):  # keep the hint when raised in a worker process
        return (type(self), (str(self), self.hint))

    def one_line(self) -> str:
        msg = str(self).replace("\n", " ").strip()
        return f"{msg} ({self.hint})" if self.hint else msg


class UsageError(EncbenchError):
    """The command line is malformed (argparse uses the same code)."""

    exit_code = 2


class UnknownNameError(EncbenchError):
    """An engine, workload, variant key/value or probe that does not exist."""

    exit_code = 3


class BadValueError(EncbenchError):
    """A value of the right kind but out of range or unparsable (--size, --runs)."""

    exit_code = 4


class OutputError(EncbenchError):
    """The result file cannot be written."""

    exit_code = 5


class ResultFileError(EncbenchError):
    """A result file that cannot be read: missing, corrupt or truncated JSON."""

    exit_code = 6


class SchemaVersionError(ResultFileError):
    """A result file of a schema version this encbench does not know."""

    exit_code = 7


class WrongKeyError(EncbenchError):
    """An encrypted database that does not open with the key given."""

    exit_code = 8


class IncomparableError(EncbenchError):
    """Two result files whose environments differ too much to compare."""

    exit_code = 9


class EngineUnavailableError(EncbenchError):
    """The engine's library or server cannot be found or started."""

    exit_code = 10


class RunFailedError(EncbenchError):
    """A measurement failed while running (partial results are kept)."""

    exit_code = 11


class CheckFailedError(EncbenchError):
    """A run whose real state differs from the state requested (e.g. not encrypted)."""

    exit_code = 12


class NoTLSError(EngineUnavailableError):
    """tls-scan: the server answers but offers no TLS at all."""

    exit_code = 15


class NotADatabaseError(EngineUnavailableError):
    """tls-scan: something answers on that port, but not the database protocol named."""

    exit_code = 16


class FilesystemUnavailableError(EngineUnavailableError):
    """An encrypted filesystem (host/encfs) cannot be made here: not root, no loop device, no /dev/fuse,
    fscrypt or gocryptfs not installed."""

    exit_code = 19


class EncryptionRefusedError(EngineUnavailableError):
    """The filesystem refuses to encrypt (no `encrypt` feature, a kernel without fscrypt support)."""

    exit_code = 20


class StoreUnavailableError(EncbenchError):
    """--store / encbench history: the history store cannot be reached, opened or written (the result file,
    when the command writes one, is written before the store is tried)."""

    exit_code = 21


class StoreSchemaError(StoreUnavailableError):
    """A history store whose schema is newer than this encbench knows (written by a newer encbench)."""

    exit_code = 22


class NotMeteredError(EncbenchError):
    """compare --fail-if on a count (instructions): a file holds no instruction counts (it was not run with --meter
    instructions), which no number of runs can give it."""

    exit_code = 25


EXIT_INTERRUPTED = 130
EXIT_LEAK = 13  # leak-check: plaintext found on disk
EXIT_DRIFT = 14  # tls-scan --baseline: the server's TLS differs from the baseline
EXIT_GATE = 17  # compare --fail-if: B is significantly worse than A by more than allowed
EXIT_SELFTEST = 18  # selftest: more A/A false positives than the 95% CIs promise
EXIT_GATE_UNRESOLVED = 23  # compare --fail-if: no row over the limit, but some not resolved at it (more runs)
EXIT_NO_ESTIMATE = 24  # estimate: a term of the bill (a unit cost or a rate) is not resolved: no total

EXIT_CODES = {
    0: "success",
    1: "internal error (a bug: please report it with --debug output)",
    UsageError.exit_code: "malformed command line",
    UnknownNameError.exit_code: "unknown engine, workload, variant or probe",
    BadValueError.exit_code: "bad value (--size, --runs, ...)",
    OutputError.exit_code: "output file not writable",
    ResultFileError.exit_code: "result file missing, corrupt or truncated",
    SchemaVersionError.exit_code: "result file of an unknown schema version",
    WrongKeyError.exit_code: "wrong key for an existing encrypted database",
    IncomparableError.exit_code: "result files not comparable (use --force)",
    EngineUnavailableError.exit_code: "engine library or server unavailable",
    RunFailedError.exit_code: "a run failed (partial results kept)",
    CheckFailedError.exit_code: "a run was not in the requested state (e.g. not encrypted)",
    EXIT_LEAK: "leak-check: the canary was found in plaintext on disk",
    EXIT_DRIFT: "tls-scan --baseline: the server's TLS configuration differs from the baseline",
    NoTLSError.exit_code: "tls-scan: the server offers no TLS",
    EXIT_GATE: "compare --fail-if: a contender is worse than allowed",
    NotADatabaseError.exit_code: "tls-scan: the port does not speak the database protocol named",
    EXIT_SELFTEST: "selftest: the A/A check found more false positives than the statistics promise",
    FilesystemUnavailableError.exit_code: "encrypted filesystem unavailable (not root, no loop device or "
                                          "/dev/fuse, fscrypt or gocryptfs missing)",
    EncryptionRefusedError.exit_code: "the filesystem refuses to encrypt (encrypt feature or kernel support missing)",
    StoreUnavailableError.exit_code: "history store unreachable, not a store, or not writable",
    StoreSchemaError.exit_code: "history store of a newer schema than this encbench knows",
    EXIT_GATE_UNRESOLVED: "compare --fail-if: no row shown over the limit, but some not resolved at it (more runs "
                          "would tell)",
    EXIT_NO_ESTIMATE: "estimate: no total: a term's unit cost or rate is not resolved (the output names it and "
                      "what would resolve it)",
    NotMeteredError.exit_code: "compare --fail-if 'instructions...': a file holds no instruction counts (run it with "
                               "--meter instructions)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C); results so far kept",
}
