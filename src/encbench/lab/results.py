"""The result file: versioned JSON, written atomically after every run.

History of schema_version (the loader branches on it and refuses what it does not know):
  1 - first version (encbench 0.1): config, environment, engine, workloads, dataset,
      calibration, runs (raw per-run values, warmups tagged), summaries, comparisons,
      derived, notes, status. Optional keys added since, within version 1 (readers must
      tolerate their absence): runs[].session, runs[].server_config, attribution,
      engine.table_columns, engine.metric_words, engine.variant_keys[].workloads,
      config.params, config.engine_options, workloads[].params,
      engine.tables (one report table per axis; absent: one table from engine.axis).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from . import resultschema
from ..util import files
from ..util.files import replace_atomic
from ..errors import ResultFileError, SchemaVersionError
from ..util.redact import stored_command

SCHEMA_VERSION = 1
KNOWN_VERSIONS = (1,)
REQUIRED_KEYS = ("schema_version", "encbench_version", "environment", "engine", "config", "runs", "status")
STATUSES = ("running", "complete", "interrupted", "failed")


# A result file larger than this is refused (docs/RESULTS.md): resultschema.MAX_RUNS runs of ~3 kB each (150 MB),
# with margin (a run with --profile or --meter holds more); show reads one of this size in bounded time and memory.
MAX_BYTES = 200 * 2**20


def write_atomic(path: Path, doc: dict) -> None:
    """Write to a temporary file in the same directory, then rename over the target
    (which must be new or a regular file: checked again right before the rename)."""
    path = Path(path)
    data = json.dumps(doc, indent=1, sort_keys=False, default=_json_default)
    replace_atomic(path, data + "\n", what="the result file", hint="check the path and free space")


def check_readable(path: str | os.PathLike, what: str = "result file") -> None:
    """A file to read must be a regular file (following symlinks): a FIFO without a writer would
    block for ever, a device such as /dev/zero never ends. Exit code 6, before it is opened."""
    files.check_regular(path, what=what, error=ResultFileError, hint=_GIVE_SAVED)


_GIVE_SAVED = "give the path of a saved file"


def _json_default(obj):
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def _parse(path: Path, text: str):
    """json.loads, refusing a nesting that would exhaust the stack (or anything json cannot hold)."""
    problem = resultschema.prescan(text)
    if problem:
        raise ResultFileError(f"result file {path} {problem}: not an encbench result file "
                              f"(docs/RESULTS.md: what a result file holds)", hint=_RESTORE)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultFileError(
            f"result file {path} is not valid JSON at line {e.lineno} column {e.colno} (truncated or corrupt?)",
            hint=_RESTORE,
        ) from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of more digits than Python converts
        raise ResultFileError(f"result file {path} is not usable JSON: {str(e).splitlines()[0][:120]}",
                              hint=_RESTORE) from None


_RESTORE = "re-run the benchmark, or restore the file"


def load(path: str | os.PathLike) -> dict:
    """Read and check a result file; a clear ResultFileError for anything unusable.

    After the version, the whole document is checked against what show, compare, report
    and estimate read (resultschema): the first problem is named by its JSON path.
    """
    path = Path(path)
    text = files.read_text(path, what="result file", limit=MAX_BYTES, error=ResultFileError)
    doc = _parse(path, text)
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise ResultFileError(f"{path} is not an encbench result file (no schema_version)")
    version = doc["schema_version"]
    if type(version) is not int or version not in KNOWN_VERSIONS:
        raise SchemaVersionError(
            f"result file {path} has schema version {version!r}; this encbench reads {', '.join(map(str, KNOWN_VERSIONS))}",
            hint="use the encbench version that wrote it, or upgrade encbench",
        )
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        raise ResultFileError(f"result file {path} lacks {', '.join(missing)} (truncated or edited?)", hint=_RESTORE)
    try:
        resultschema.check(doc, version)
    except resultschema.Problem as p:
        raise ResultFileError(f"result file {path}: {p} (truncated or edited?)", hint=_RESTORE) from None
    if isinstance(doc["config"].get("command"), str):  # an older file may hold what redaction then missed
        doc["config"]["command"] = stored_command(doc["config"]["command"])
    return doc


# what a value of an unexpected shape raises in the readers (analysis, report, compare, estimate)
_SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError, OverflowError,
                 RecursionError)


@contextlib.contextmanager
def reading(*paths):
    """Around the use of loaded result files: whatever the checks in load() missed and a reader trips
    on is a ResultFileError (exit 6) naming the files, never a crash."""
    try:
        yield
    except _SHAPE_ERRORS as e:
        names = " and ".join(str(p) for p in paths)
        raise ResultFileError(f"result file {names} cannot be read as expected: {type(e).__name__}: "
                              f"{str(e)[:160]} (edited?)", hint=_RESTORE) from e
