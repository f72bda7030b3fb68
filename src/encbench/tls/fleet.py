"""`encbench tls-scan --targets FILE`: many servers at once, each with its own time limit and baseline.

A targets file names one server per line, as a DSN (`postgresql://db1:5432`, `mysql://u:p@db2`) or as
`host:port[/engine]` (`db3:5433/postgres`; without /engine, the engine whose default port it is); `#`
starts a comment, blank lines are skipped. Targets are scanned concurrently in threads (a scan waits on
the network, never on Python); one that fails is reported with its own exit code and never stops the
others. With a baseline directory each target is compared with its own file there (named after the
target, `baseline_name`), written on first sight.

The process's exit code when targets differ (docs/RESULTS.md): 14 if any target drifted; otherwise the
failed targets' code when they share one (10 unreachable, 15 no TLS, 16 not that protocol), else 10 (the
code these failures have in common); 0 when every target was scanned and none drifted.
"""

from __future__ import annotations

import hashlib
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import (EXIT_DRIFT, BadValueError, EncbenchError, EngineUnavailableError, OutputError, UnknownNameError,
                      UsageError)
from ..util.columns import fit, output_width, wrap
from ..util.redact import redact
from . import baseline as tlsbaseline
from . import scan as tlsscan
from ..errors import ResultFileError
from ..util import files
from ..util.files import check_writable

DEFAULT_JOBS = 8
DEFAULT_TIMEOUT_S = 120.0  # per target: the whole scan (a full scan of a local PostgreSQL takes ~3 s alone)
TARGETS_MAX_BYTES = 16 * 2**20  # one line per server: a fleet of 100,000 is ~5 MB
GRADE_ORDER = "ABCF"  # best to worst (scan.grade)

_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(?P<port>[0-9]+)(?:/(?P<engine>[A-Za-z0-9_-]+))?$")


@dataclass(frozen=True)
class Target:
    line: int  # in the targets file, from 1
    endpoint: tlsscan.Endpoint

    @property
    def label(self) -> str:
        return self.endpoint.label

    @property
    def key(self) -> tuple[str, str, int]:
        """What makes two lines the same target: the protocol, the host (case-insensitive) and the port."""
        return self.endpoint.kind, self.endpoint.host.lower(), self.endpoint.port


@dataclass(frozen=True)
class BadLine:
    """A line of a targets file that names no target encbench can scan (a typo, an unclosed IPv6 bracket, a
    server listed twice): reported as a failed target with its line and reason; the other lines are scanned."""

    line: int
    text: str  # the line as written, its password hidden
    error: EncbenchError
    endpoint = None

    @property
    def label(self) -> str:
        return self.text

    @property
    def key(self) -> tuple[str, int]:
        return "line", self.line


# -- the targets file -------------------------------------------------------------------------

def _engine_named(word: str, where: str):
    engines = tlsscan.tls_scan_engines()
    found = next((e for e in engines if word.lower() in (e.name, *e.dsn_schemes)), None)
    if found is None:
        raise UnknownNameError(f"{where}: unknown engine {word!r}",
                               hint="one of " + ", ".join(e.name for e in engines))
    return found


def parse_line(text: str, where: str) -> tlsscan.Endpoint:
    """One target: a DSN, or host:port[/engine]. `where` ('FILE line N') starts every error."""
    if "://" in text:
        try:
            return tlsscan.parse_target(text)
        except BadValueError as e:
            raise BadValueError(f"{where}: {redact(str(e))}", hint=e.hint) from None
    m = _HOST_PORT.match(text)
    if not m:
        raise BadValueError(f"{where}: {redact(text)!r} is neither a DSN nor host:port[/engine]",
                            hint=f"e.g. db1:5432/postgres or {tlsscan.schemes_text().split(' or ')[0]}db1:5432")
    port = int(m["port"])
    if not 0 < port < 65536:
        raise BadValueError(f"{where}: port {port} is out of range (1-65535)")
    if m["engine"]:
        engine = _engine_named(m["engine"], where)
    else:
        engine = next((e for e in tlsscan.tls_scan_engines() if e.default_port == port), None)
        if engine is None:
            raise BadValueError(f"{where}: which engine listens on {text}? port {port} is no engine's default",
                                hint=f"name it: {text}/" + " or /".join(e.name for e in tlsscan.tls_scan_engines()))
    return tlsscan.Endpoint(engine.wire_protocol, m["host"].strip("[]"), port)


def _strip_comment(raw: str) -> str:
    text = raw.strip()
    if text.startswith("#"):
        return ""
    return re.split(r"\s#", text, maxsplit=1)[0].strip()


def tls_target(line: int, body: str, where: str) -> Target:
    """tls-scan's reading of one line (parse_targets' default `make`)."""
    return Target(line, parse_line(body, where))


TLS_EXAMPLE = "one DSN or host:port[/engine] per line, e.g. db1:5432/postgres"


def parse_targets(text: str, name: str, make=tls_target, example: str = TLS_EXAMPLE, keep_bad: bool = False) -> list:
    """Every target of a targets file's text, in file order; errors name the line. `make(line, body, where)`
    reads one line into a target with `.line`, `.key` (equal keys: the same server, refused) and `.label`
    (leak-check --posture --targets reads DSNs its own way). `keep_bad` (tls-scan): a line that names no
    target becomes a BadLine in its place instead of refusing the file."""
    targets: list = []
    seen: dict[tuple, object] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        body = _strip_comment(raw)
        if not body:
            continue
        try:
            target = _one_target(n, body, f"{name} line {n}", make, seen)
        except EncbenchError as e:
            if not keep_bad:
                raise
            target = BadLine(n, redact(body), e)
        seen.setdefault(target.key, target)
        targets.append(target)
    if not targets:
        raise UsageError(f"the targets file {name} names no target", hint=example)
    return targets


def _one_target(n: int, body: str, where: str, make, seen: dict):
    if len(body.split()) > 1:
        raise BadValueError(f"{where}: one target per line, found {len(body.split())} words",
                            hint="put each target on its own line; # starts a comment")
    target = make(n, body, where)
    if target.key in seen:
        raise BadValueError(f"{where}: {target.label} repeats line {seen[target.key].line}",
                            hint="list each server once")
    return target


def read_targets(path: Path, make=tls_target, example: str = TLS_EXAMPLE, keep_bad: bool = False) -> list:
    # a FIFO or a device would block or never end: refused (6); text that is not UTF-8: a bad value (4)
    text = files.read_text(path, what="targets file", limit=TARGETS_MAX_BYTES, error=ResultFileError,
                           encoding_error=BadValueError, hint=example)
    return parse_targets(text, str(path), make, example, keep_bad)


# -- baselines ------------------------------------------------------------------------------

_SAFE = re.compile(r"[^A-Za-z0-9.-]")


def baseline_name(ep: tlsscan.Endpoint) -> str:
    """A file name for the target's baseline: `<protocol>_<host>_<port>.json`, the host lowercased and
    reduced to letters, digits, '.' and '-' (anything else becomes '-', and a short hash of the host
    keeps two such hosts apart). Never a path: no '/', no leading dot."""
    host = ep.host.lower()
    safe = _SAFE.sub("-", host).strip(".") or "host"
    if safe != host:
        safe += "-" + hashlib.sha256(host.encode()).hexdigest()[:8]
    return f"{_SAFE.sub('-', ep.kind)}_{safe}_{ep.port}.json"


def prepare_baseline_dir(directory: Path) -> None:
    """The directory exists (made here if its parent does) and can be written; exit 5 otherwise."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"--baseline-dir {directory} is not a directory", hint="give a directory for the baselines")
    try:
        directory.mkdir(exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create --baseline-dir {directory}: {e.strerror or e}",
                          hint="create its parent first, or choose another directory") from None
    check_writable(directory / "probe.json", what="baselines in", hint="choose a writable --baseline-dir")


def load_baselines(directory: Path, targets: list[Target]) -> dict[str, dict]:
    """The saved baseline of every target that has one (a corrupt one fails the command before any scan)."""
    out = {}
    for t in targets:
        if isinstance(t, BadLine):
            continue
        path = Path(directory) / baseline_name(t.endpoint)
        if path.exists() or path.is_symlink():
            out[t.label] = tlsbaseline.load(path)
    return out


# -- scanning --------------------------------------------------------------------------------

@dataclass
class Outcome:
    """One target's result: its scan, or the error that stopped it, and its own exit code."""

    target: Target
    exit_code: int = 0
    status: str = "ok"  # ok | drift | new-baseline | error
    error: str | None = None
    scan: dict | None = None
    drift: list[str] | None = None  # None: not compared (no baseline directory)
    baseline: str | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def suites(self) -> list[dict]:
        return [s for ss in (self.scan or {}).get("suites", {}).values() for s in ss]

    @property
    def weakest_grade(self) -> str | None:
        grades = [s["grade"] for s in self.suites if s.get("grade") in GRADE_ORDER]
        return max(grades, key=GRADE_ORDER.index) if grades else None

    def to_dict(self) -> dict:
        """One JSON Lines object (no secret: the target is its label, never the DSN as written)."""
        return {"target": self.target.label, "line": self.target.line,
                "engine": self.target.endpoint.kind if self.target.endpoint else None,
                "exit_code": self.exit_code, "status": self.status, "error": self.error,
                "protocols": (self.scan or {}).get("protocols"),
                "suites_accepted": len(self.suites) if self.scan else None,
                "weakest_grade": self.weakest_grade, "drift": self.drift, "baseline": self.baseline,
                "seconds": round(self.seconds, 3), "notes": self.notes, "scan": self.scan}


def scan_one(target: Target, *, timeout_s: float, baselines: dict[str, dict] | None,
             baseline_dir: Path | None, update: bool = False, scan=tlsscan.scan, live: list | None = None) -> Outcome:
    """Scan one target within timeout_s, compare it with its baseline; never raises an EncbenchError.
    `live` collects the endpoint being scanned (scan_all ends it early on Ctrl-C)."""
    if isinstance(target, BadLine):  # nothing to scan: the line's own error, as a failed target's
        return Outcome(target, exit_code=target.error.exit_code, status="error",
                       error=redact(target.error.one_line()))
    start = time.monotonic()
    ep = tlsscan.Endpoint(target.endpoint.kind, target.endpoint.host, target.endpoint.port,
                          timeout=min(tlsscan.TIMEOUT_S, timeout_s), deadline=start + timeout_s)
    if live is not None:
        live.append(ep)
    out = Outcome(target)
    try:
        out.scan = scan(ep)
    except EncbenchError as e:
        out.exit_code, out.status, out.error = e.exit_code, "error", redact(e.one_line())
    except OSError as e:  # a socket error no step above turned into a message
        out.exit_code, out.status = EngineUnavailableError.exit_code, "error"
        out.error = f"{target.label}: {e.strerror or e}"
    out.seconds = time.monotonic() - start
    if out.scan is None or baseline_dir is None:
        return out
    path = Path(baseline_dir) / baseline_name(target.endpoint)
    out.baseline = str(path)
    old = (baselines or {}).get(target.label)
    if old is None:
        tlsbaseline.save(out.scan, path)
        out.status, out.drift = "new-baseline", []
        out.notes.append(f"no baseline yet: this scan saved as {path}")
        return out
    out.drift = tlsbaseline.diff(old, out.scan)
    if any(not line.startswith("note:") for line in out.drift):
        out.exit_code, out.status = EXIT_DRIFT, "drift"
    if update:
        tlsbaseline.save(out.scan, path)
        out.notes.append(f"baseline {path} updated (--update-baselines)")
    return out


def scan_all(targets: list[Target], *, jobs: int = DEFAULT_JOBS, timeout_s: float = DEFAULT_TIMEOUT_S,
             baseline_dir: Path | None = None, update: bool = False, scan=tlsscan.scan) -> list[Outcome]:
    """Every target's Outcome, in file order; `jobs` scans at a time."""
    baselines = load_baselines(baseline_dir, targets) if baseline_dir is not None else None
    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(targets))), thread_name_prefix="tls-scan")
    live: list[tlsscan.Endpoint] = []
    try:
        futures = [pool.submit(scan_one, t, timeout_s=timeout_s, baselines=baselines, baseline_dir=baseline_dir,
                               update=update, scan=scan, live=live) for t in targets]
        return [f.result() for f in futures]
    except BaseException:  # Ctrl-C (or a bug): queued scans never start, running ones stop at their next wait
        for ep in list(live):
            ep.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def combined_exit_code(codes, overriding: int) -> int:
    """The process's code for many targets' codes: `overriding` if any target has it (14 drift for tls-scan,
    13 plaintext for leak-check --posture); else the failures' shared code, 10 when they differ; else 0."""
    codes = set(codes)
    if overriding in codes:
        return overriding
    failed = codes - {0}
    if not failed:
        return 0
    return failed.pop() if len(failed) == 1 else EngineUnavailableError.exit_code


def exit_code(outcomes: list[Outcome]) -> int:
    """14 if any target drifted; else the failures' shared code, 10 when they differ; else 0."""
    return combined_exit_code((o.exit_code for o in outcomes), EXIT_DRIFT)


# -- the summary table ------------------------------------------------------------------------

def _drift_cell(o: Outcome) -> str:
    if o.status == "error":
        return f"ERROR (exit {o.exit_code})"
    if o.drift is None:
        return "-"
    if o.status == "new-baseline":
        return "new baseline"
    real = [line for line in o.drift if not line.startswith("note:")]
    return f"DRIFT: {len(real)} change(s)" if real else "no change"


def table_lines(outcomes: list[Outcome]) -> list[str]:
    rows = [("target", "protocols", "suites", "weakest", "drift")]
    for o in outcomes:
        rows.append((o.target.label, ",".join(p.replace("TLSv", "") for p in o.scan["protocols"]) or "none"
                     if o.scan else "-", str(len(o.suites)) if o.scan else "-", o.weakest_grade or "-", _drift_cell(o)))
    width = output_width()
    lines = fit(rows, width)
    for o in outcomes:  # the prose under the table, wrapped to the width
        if o.error:
            lines += wrap(f"  {o.target.label} (line {o.target.line}): {o.error}", width)
        for d in o.drift or []:
            lines += wrap(f"  {o.target.label}: {d}" if d.startswith("note:") else f"  {o.target.label}: DRIFT  {d}",
                          width)
    drifted = sum(o.status == "drift" for o in outcomes)
    failed = sum(o.status == "error" for o in outcomes)
    lines += wrap(f"{len(outcomes)} target(s): {len(outcomes) - failed} scanned, {failed} failed, {drifted} drifted",
                  width)
    return lines
