"""The result-file loader under mutation: 300+ seeded mutants of the golden v1 file and of a
fresh `encbench run` file, each through `show` (every format), `compare`, `report` and
`estimate`, in process (cli.main with argv). Every answer is exit 0 or a documented
bad-file code, on one stderr line, with no traceback, no hang and no numpy warning.

Run as a script for the counts: `.venv/bin/python tests/unit/test_loader_fuzz.py [N]`.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest

from encbench import cli

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

GOLDEN = TESTS / "golden" / "results-v1.json"
SEED = 11
MUTANTS_PER_SOURCE = 150
TIMEOUT_S = 20
ALLOWED = {0, 6, 7}  # success, ResultFileError, SchemaVersionError
# 4: the (mutated) file has no per-page cost to estimate from; 24: the bill has no total (a term's cost is not
# resolved): an answer on stdout that names the term, not an error line
ESTIMATE_ALLOWED = ALLOWED | {4, 24}
ANSWERS = {24}  # exit codes that answer on stdout (no error line on stderr)
DEEP = "__encbench_fuzz_deep__"

# -- the mutator ---------------------------------------------------------------------------------

OTHER_VALUES = (None, True, False, 0, -1, 1.5, "", "x", "4096", [], {}, [1, "a"], {"a": 1}, [[]], "\ud800")
NUMBERS = (float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 10 ** 400, 0, -0.0, 5e-324, 2 ** 63)


def _paths(node, path=()):
    """Every (path, value) in the document, parents before children."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


def _set(doc, path, value):
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _delete(doc, path):
    node = doc
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]


def _pick(rng, doc, want=lambda p, v: True):
    found = [(p, v) for p, v in _paths(doc) if p and want(p, v)]
    return rng.choice(found) if found else None


def _swap_type(rng, doc):
    p, v = _pick(rng, doc)
    _set(doc, p, rng.choice([x for x in OTHER_VALUES if type(x) is not type(v)]))
    return f"type swap at {p}"


def _delete_key(rng, doc):
    got = _pick(rng, doc, lambda p, v: isinstance(p[-1], str))
    _delete(doc, got[0])
    return f"delete {got[0]}"


def _numbers(rng, doc):
    got = _pick(rng, doc, lambda p, v: isinstance(v, (int, float)) and not isinstance(v, bool)) or _pick(rng, doc)
    _set(doc, got[0], rng.choice(NUMBERS))
    return f"number at {got[0]}"


def _metrics(rng, doc):
    """A measured value made NaN, infinite or huge (what a broken probe could write)."""
    got = _pick(rng, doc, lambda p, v: len(p) > 2 and p[0] == "runs" and p[-2] in ("metrics", "open", "extra"))
    if got is None:
        return _numbers(rng, doc)
    _set(doc, got[0], rng.choice(NUMBERS[:6]))
    return f"metric at {got[0]}"


def _nested_key(rng, doc):
    """Wrong types deep in the parts the readers use: runs, engine, environment, calibration."""
    top = rng.choice(["runs", "engine", "environment", "calibration", "config", "workloads", "dataset"])
    got = _pick(rng, doc, lambda p, v: p[0] == top and len(p) > 1)
    if got is None:
        return _swap_type(rng, doc)
    p, v = got
    _set(doc, p, rng.choice([x for x in OTHER_VALUES if type(x) is not type(v)]))
    return f"nested swap at {p}"


def _deep(rng, doc):
    got = _pick(rng, doc)
    _set(doc, got[0], DEEP)
    return f"deep nesting at {got[0]}"


MUTATIONS = (_swap_type, _delete_key, _numbers, _metrics, _nested_key, _deep)


def _text(doc, rng) -> str:
    text = json.dumps(doc, indent=1)  # NaN and Infinity are written as the tokens Python reads back
    depth = rng.choice((40, 65, 500, 990, 3000, 100_000))
    return text.replace(json.dumps(DEEP), "[" * depth + "1" + "]" * depth)


def _bytes_mutant(rng, data: bytes) -> tuple[bytes, str]:
    if rng.random() < 0.5:
        cut = rng.randrange(len(data))
        return data[:cut], f"truncated at {cut}"
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out), "garbage bytes"


def mutants(source: dict, n: int, seed: int):
    """n (bytes, description) mutants of one document; the same seed gives the same mutants."""
    rng = random.Random(seed)
    for _ in range(n):
        if rng.random() < 0.15:
            yield _bytes_mutant(rng, json.dumps(source, indent=1).encode())
            continue
        doc = copy.deepcopy(source)
        what = "; ".join(rng.choice(MUTATIONS)(rng, doc) for _ in range(rng.choice((1, 1, 1, 2, 3))))
        yield _text(doc, rng).encode("utf-8", "surrogatepass"), what


# -- running the commands in process ---------------------------------------------------------------

class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def run_cli(argv: list[str]) -> tuple[int, str, str, list[str]]:
    """(exit code, stdout, stderr, numpy/runtime warnings) of cli.main(argv), with a timeout."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            rc = cli.main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # cli.main installs its own
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    found = [f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, RuntimeWarning)]
    return rc, out.getvalue(), err.getvalue(), found


def commands(path: Path, other: Path, i: int, html: Path) -> list[tuple[list[str], set]]:
    """The readers of a result file: show in one of its formats (rotating), compare (odd mutants)
    or estimate (even ones), and (every 15th: matplotlib is slow) report."""
    fmt = ("table", "markdown", "json")[i % 3]
    out = [(["show", str(path), "--format", fmt], ALLOWED),
           (["compare", "--force", str(other), str(path)], ALLOWED) if i % 2 else
           (["estimate", "--from", str(path), "--read-rate", "25MB/s"], ESTIMATE_ALLOWED)]
    if i % 15 == 0:
        out.append((["report", "-o", str(html), str(path)], ALLOWED))
    return out


def check(argv, allowed, rc, stdout, stderr, warns) -> list[str]:
    """What is wrong with one answer (empty: fine)."""
    problems = []
    if rc not in allowed:
        problems.append(f"exit {rc}")
    if "Traceback" in stderr or "internal error" in stderr:
        problems.append("traceback/internal error")
    if rc != 0 and rc not in ANSWERS and len(stderr.strip().splitlines()) != 1:
        problems.append(f"{len(stderr.strip().splitlines())} stderr lines")
    if rc in ANSWERS and ("NOT RESOLVED" not in stdout or stderr.strip()):
        problems.append("a bill without a total that does not say so on stdout alone")
    if rc in (6, 7) and not stderr.startswith("encbench: error: "):
        problems.append("error line not in the usual form")
    if warns:
        problems.append(f"warnings: {warns[:2]}")
    if "nan µs" in stdout or "nan ms" in stdout or " nan s" in stdout:
        problems.append("a NaN printed as a duration")
    return problems


def fuzz(sources: list[Path], per_source: int, work: Path) -> dict:
    counts = {"mutants": 0, "runs": 0, "exit": Counter(), "by_command": Counter(), "guard": 0, "failures": []}
    for s, source in enumerate(sources):
        doc = json.loads(source.read_text())
        for i, (data, what) in enumerate(mutants(doc, per_source, SEED + s)):
            path = work / f"m{s}-{i}.json"
            path.write_bytes(data)
            counts["mutants"] += 1
            for argv, allowed in commands(path, source, i, work / "r.html"):
                try:
                    rc, stdout, stderr, warns = run_cli(argv)
                except Hang:
                    rc, stdout, stderr, warns = "hang", "", "", []
                counts["runs"] += 1
                counts["exit"][rc] += 1
                counts["by_command"][(argv[0], rc)] += 1
                if "cannot be read as expected" in stderr:
                    counts["guard"] += 1
                    counts["failures"].append(f"{source.name} mutant {i} ({what}): {argv[0]}: guard: {stderr.strip()[:300]}")
                problems = check(argv, allowed, rc, stdout, stderr, warns) if rc != "hang" else ["hang"]
                if problems:
                    counts["failures"].append(f"{source.name} mutant {i} ({what}): {argv[0]}: {problems}: "
                                              f"{stderr.strip()[:300]}")
            path.unlink()
    return counts


# -- the tests -----------------------------------------------------------------------------------

def make_fresh(work: Path) -> Path:
    """A real result file from a tiny run (SQLite, one workload, two runs)."""
    out = work / "fresh.json"
    res = subprocess.run([sys.executable, "-m", "encbench.cli", "run", "--quick", "--runs", "2", "--warmups", "0",
                          "--size", "1MB", "--workload", "scan-like", "--data-dir", str(work / "data"), "-o", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return out


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    return make_fresh(tmp_path_factory.mktemp("fresh"))


def test_golden_and_fresh_show_cleanly(fresh):
    for path in (GOLDEN, fresh):
        for fmt in ("table", "markdown", "json"):
            rc, out, err, warns = run_cli(["show", str(path), "--format", fmt])
            assert (rc, err, warns) == (0, "", [])
            assert "encryption" in out


def test_fuzzed_result_files(fresh, tmp_path):
    t0 = time.monotonic()
    counts = fuzz([GOLDEN, fresh], MUTANTS_PER_SOURCE, tmp_path)
    elapsed = time.monotonic() - t0
    print(f"\n{counts['mutants']} mutants, {counts['runs']} command runs in {elapsed:.1f} s; exit codes "
          f"{dict(counts['exit'])}; caught by the reading guard: {counts['guard']}")
    assert counts["mutants"] >= 300
    assert not counts["failures"], "\n".join(counts["failures"][:20])
    assert counts["exit"][0] > 0 and counts["exit"][6] > 0  # both outcomes are reached
    assert counts["guard"] == 0, "a shape the schema does not describe reached a reader"


@pytest.mark.parametrize("depth", [65, 990, 5000, 200_000])
def test_deep_nesting_is_refused_in_one_line(tmp_path, depth):
    doc = json.loads(GOLDEN.read_text())
    text = json.dumps(doc).replace('"engine":', '"deep": ' + "[" * depth + "]" * depth + ', "engine":', 1)
    path = tmp_path / "deep.json"
    path.write_text(text)
    rc, out, err, _ = run_cli(["show", str(path)])
    assert rc == 6 and "nests deeper than" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("mutate,where", [
    (lambda d: d.__setitem__("config", []), "config is a list, not an object"),
    (lambda d: d["environment"].pop("cpu"), "environment has no 'cpu'"),
    (lambda d: d["engine"]["variant_keys"][1].pop("applies_when"), "engine.variant_keys[1] has no 'applies_when'"),
    (lambda d: d["runs"][2]["operations"][0]["metrics"].__setitem__("wall_s", "fast"),
     "runs[2].operations[0].metrics.wall_s is a string, not a number"),
    (lambda d: d["calibration"]["raw_cipher"]["4096"].__setitem__("mb_per_s_per_core", 0),
     'calibration.raw_cipher["4096"].mb_per_s_per_core is 0, not a positive number'),
    (lambda d: d["environment"]["cpu"].__setitem__("logical_cores", float("nan")),
     "environment.cpu.logical_cores is not a number (NaN), not a finite number"),
])
def test_problem_named_by_its_json_path(tmp_path, mutate, where):
    doc = json.loads(GOLDEN.read_text())
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    for argv in (["show", str(path)], ["compare", str(GOLDEN), str(path)], ["report", "-o", str(tmp_path / "r.html"),
                                                                            str(path)],
                 ["estimate", "--from", str(path), "--read-rate", "1MB/s"]):
        rc, out, err, _ = run_cli(argv)
        assert rc == 6, (argv, err)
        assert where in err and len(err.splitlines()) == 1


def test_nan_metric_is_shown_as_not_a_number(tmp_path):
    doc = json.loads(GOLDEN.read_text())
    for run in doc["runs"]:
        if run["variant"]["encryption"] == "on":
            for op in run["operations"]:
                op["metrics"]["wall_s"] = float("nan")
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(doc))
    rc, out, err, warns = run_cli(["show", str(path), "--detail"])  # the elapsed column: --detail
    assert rc == 0 and not warns and "nan µs" not in out and "not a number" in out


def test_a_real_traceback_never_reaches_stderr(tmp_path):
    """Out of process too, on a few mutants: what a user sees."""
    doc = json.loads(GOLDEN.read_text())
    for i, (data, what) in enumerate(mutants(doc, 4, 99)):
        path = tmp_path / f"m{i}.json"
        path.write_bytes(data)
        res = subprocess.run([sys.executable, "-m", "encbench.cli", "show", str(path)], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode in ALLOWED and "Traceback" not in res.stderr, (what, res.stderr)


if __name__ == "__main__":
    import tempfile

    n = int(sys.argv[1]) if len(sys.argv) > 1 else MUTANTS_PER_SOURCE
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t0 = time.monotonic()
        c = fuzz([GOLDEN, make_fresh(work)], n, work)
        print(f"{c['mutants']} mutants, {c['runs']} command runs, {time.monotonic() - t0:.1f} s")
        print("exit codes:", dict(c["exit"]))
        print("by command:", dict(sorted(c["by_command"].items(), key=str)))
        print("caught by the reading guard:", c["guard"])
        print(f"failures: {len(c['failures'])}")
        for f in c["failures"]:
            print("  " + f)
        sys.exit(1 if c["failures"] else 0)
