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

import json
import os
import tempfile
from pathlib import Path

from .errors import OutputError, ResultFileError, SchemaVersionError

SCHEMA_VERSION = 1
KNOWN_VERSIONS = (1,)
REQUIRED_KEYS = ("schema_version", "encbench_version", "environment", "engine", "config", "runs", "status")
STATUSES = ("running", "complete", "interrupted", "failed")


def check_writable(path: Path) -> None:
    """Fail before any work if the result file cannot be written."""
    path = Path(path)
    if path.exists() and path.is_dir():
        raise OutputError(f"output {path} is a directory", hint="give a file name, e.g. -o results.json")
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".encbench-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(
            f"cannot write the result file {path}: {e.strerror or e}",
            hint="choose a writable path with -o",
        ) from None


def write_atomic(path: Path, doc: dict) -> None:
    """Write to a temporary file in the same directory, then rename over the target."""
    path = Path(path)
    data = json.dumps(doc, indent=1, sort_keys=False, default=_json_default)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
        os.fchmod(fd, 0o666 & ~_umask())  # as an ordinary new file, not mkstemp's 0600
        with os.fdopen(fd, "w") as f:
            f.write(data)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise OutputError(f"cannot write the result file {path}: {e.strerror or e}", hint="check the path and free space") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _json_default(obj):
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


RUN_KEYS = {"workload": str, "variant": dict, "variant_label": str, "operations": list}
OPERATION_KEYS = {"operation": str, "metrics": dict}


def _run_problem(run) -> str | None:
    """What is wrong with one run record, or None."""
    if not isinstance(run, dict):
        return "is not an object"
    for key, kind in RUN_KEYS.items():
        if not isinstance(run.get(key), kind):
            return f"has no valid {key!r}"
    for op in run["operations"]:
        if not isinstance(op, dict) or any(not isinstance(op.get(k), t) for k, t in OPERATION_KEYS.items()):
            return "has a malformed operation"
        if any(not isinstance(v, (int, float)) for v in op["metrics"].values()):
            return "has a non-numeric metric"
    return None


def load(path: str | os.PathLike) -> dict:
    """Read and check a result file; a clear ResultFileError for anything unusable."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ResultFileError(f"result file {path} does not exist") from None
    except IsADirectoryError:
        raise ResultFileError(f"result file {path} is a directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultFileError(f"cannot read result file {path}: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultFileError(
            f"result file {path} is not valid JSON at line {e.lineno} column {e.colno} (truncated or corrupt?)",
            hint="re-run the benchmark, or restore the file",
        ) from None
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
        raise ResultFileError(f"result file {path} lacks {', '.join(missing)} (truncated or edited?)")
    if not isinstance(doc["runs"], list):
        raise ResultFileError(f"result file {path}: 'runs' is not a list")
    if doc["status"] not in STATUSES:
        raise ResultFileError(f"result file {path}: unknown status {doc['status']!r}")
    for i, run in enumerate(doc["runs"]):
        problem = _run_problem(run)
        if problem:
            raise ResultFileError(f"result file {path}: run {i + 1} {problem} (truncated or edited?)")
    return doc
