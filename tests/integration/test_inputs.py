"""Issue 21, items 4, 5, 7 and part of 9: bad input is one line with its exit code, before any work, and never
a hang, a traceback or exit 1. The real CLI on real files: FIFOs made with os.mkfifo, /dev/zero, sparse files
larger than the bounds, non-UTF-8 and NUL key files, a directory made immutable (chattr +i, removed again), a
small tmpfs for the free-space check, a real SIGTERM, and a real PostgreSQL for the role's privileges."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from integration_helpers import assert_one_line_error, encbench_command, external_pg, needs_pg

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "results-v1.json"
BOUND_S = 30  # the old behaviour: forever (FIFO), gigabytes of memory (/dev/zero), or the whole run first
TINY = ["--size", "1MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq"]


def timed(encbench, *args, **kw):
    t0 = time.monotonic()
    res = encbench(*args, timeout=BOUND_S * 3, **kw)
    return res, time.monotonic() - t0


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)  # takes no disk
    return path


# -- item 4: every file encbench reads is a regular file of a bounded size ----------------------------

READERS = {  # argv with {f} the file to read; the exit code of a refusal
    "run --key-file": (["run", "--key-file", "{f}", *TINY, "--data-dir", "{d}", "-o", "{o}"], 4),
    "history --record": (["history", "--record", "{f}", "--store", "sqlite:///{t}/h.db"], 6),
    "compare --noise-floor": (["compare", str(GOLDEN), str(GOLDEN), "--noise-floor", "{f}"], 6),
    "show": (["show", "{f}"], 6),
    "atrest": (["atrest", "{f}"], 6),
    "report": (["report", "{f}", "-o", "{t}/r.html"], 6),
    "estimate --from": (["estimate", "--from", "{f}", "--read-rate", "1MB/s"], 6),
    "tls-scan --baseline": (["tls-scan", "postgresql://127.0.0.1:1", "--baseline", "{f}"], 6),
    "tls-scan --targets": (["tls-scan", "--targets", "{f}"], 6),
    "leak-check --targets": (["leak-check", "--posture", "--targets", "{f}"], 6),
}


def _args(argv, f, tmp_path):
    return [a.format(f=f, d=tmp_path / "data", o=tmp_path / "out.json", t=tmp_path) for a in argv]


def _made(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name not in ("in.fifo", "big"))


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("kind", ["FIFO", "/dev/zero", "too large"])
def test_a_file_to_read_is_regular_and_bounded(encbench, tmp_path, reader, kind):
    if kind == "FIFO":
        path = tmp_path / "in.fifo"
        os.mkfifo(path)
        words = "is a FIFO, not a regular file"
    elif kind == "/dev/zero":
        path, words = Path("/dev/zero"), "is a character device, not a regular file"
    else:
        path, words = _sparse(tmp_path / "big", 8 * 2**30), "larger than"  # above every bound (result files: 200 MiB)
    argv, code = READERS[reader]
    res, took = timed(encbench, *_args(argv, path, tmp_path))
    line = assert_one_line_error(res, code)
    assert words in line and str(path) in line, line
    assert took < BOUND_S, took
    assert _made(tmp_path) == [], _made(tmp_path)  # nothing generated, written or recorded


def test_a_fifo_baseline_in_baseline_dir_is_refused(encbench, tmp_path):
    from encbench.tls import fleet

    targets = tmp_path / "fleet.txt"
    targets.write_text("127.0.0.1:1/postgres\n")
    bdir = tmp_path / "baselines"
    bdir.mkdir()
    fifo = bdir / fleet.baseline_name(fleet.read_targets(targets)[0].endpoint)
    os.mkfifo(fifo)
    res, took = timed(encbench, "tls-scan", "--targets", str(targets), "--baseline-dir", str(bdir))
    line = assert_one_line_error(res, 6)
    assert "is a FIFO" in line and str(fifo) in line, line
    assert took < BOUND_S


# -- item 5: one line, exit 4 ---------------------------------------------------------------------

def _key_file(tmp_path, content: bytes) -> Path:
    path = tmp_path / "key"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("content,words", [(b"pass\xff\xfeword\n", "is not UTF-8 text"),
                                           (b"pass\x00word\n", "holds a NUL byte")], ids=["non-utf8", "nul"])
def test_key_file_bytes(encbench, tmp_path, content, words):
    key = _key_file(tmp_path, content)
    res, took = timed(encbench, "run", "--key-file", str(key), *TINY, "--data-dir", str(tmp_path / "data"),
                      "-o", str(tmp_path / "out.json"))
    line = assert_one_line_error(res, 4)
    assert words in line and "--key-file" in line, line
    assert "word" not in line  # nothing of the key is shown
    assert not (tmp_path / "data").exists() and not (tmp_path / "out.json").exists()
    assert took < BOUND_S


def test_encbench_key_not_utf8(encbench, tmp_path):
    res = encbench("run", *TINY, "--data-dir", str(tmp_path / "data"), "-o", str(tmp_path / "out.json"),
                   env={"ENCBENCH_KEY": os.fsdecode(b"\xffsecret")})
    line = assert_one_line_error(res, 4)
    assert "ENCBENCH_KEY is not UTF-8 text" in line and "secret" not in line, line
    assert not (tmp_path / "data").exists()


def test_size_of_400_nines(encbench, tmp_path):
    res = encbench("run", "--size", "9" * 400, "--data-dir", str(tmp_path / "data"), "-o", str(tmp_path / "o.json"))
    line = assert_one_line_error(res, 4)
    assert "--size" in line and "out of range" in line and len(line) < 300, line


@pytest.fixture
def immutable_dir(tmp_path):
    if os.geteuid() != 0 or not shutil.which("chattr"):
        pytest.skip("chattr +i needs root")
    path = tmp_path / "immutable"
    path.mkdir()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)  # or pytest could not remove tmp_path


@pytest.mark.parametrize("kind", ["regular file", "FIFO", "immutable", "/proc"])
def test_data_dir_that_cannot_hold_data(encbench, tmp_path, request, kind):
    if kind == "regular file":
        path, words = tmp_path / "file", "is a regular file, not a directory"
        path.write_text("precious\n")
    elif kind == "FIFO":
        path, words = tmp_path / "fifo", "is a FIFO, not a directory"
        os.mkfifo(path)
    elif kind == "immutable":
        path, words = request.getfixturevalue("immutable_dir"), "Operation not permitted"
    else:
        path, words = Path("/proc"), "cannot create anything in it"
    for cmd in (["run", *TINY, "-o", str(tmp_path / "out.json")], ["selftest", "--runs", "1", "--size", "1MB"]):
        res, took = timed(encbench, *cmd, "--data-dir", str(path))
        line = assert_one_line_error(res, 4)
        assert "--data-dir" in line and words in line, line
        assert took < BOUND_S
    assert not (tmp_path / "out.json").exists()
    if kind == "regular file":
        assert path.read_text() == "precious\n"


# -- item 7: values checked before any work; no empty value means the default ----------------------

@pytest.mark.parametrize("margin", ["abc", "-5", "nan"])
def test_run_margin_is_checked_before_the_run(encbench, tmp_path, margin):
    res, took = timed(encbench, "run", *TINY, f"--margin={margin}", "--data-dir", str(tmp_path / "data"),
                      "-o", str(tmp_path / "out.json"))
    assert "--margin" in assert_one_line_error(res, 4)
    assert not (tmp_path / "data").exists() and not (tmp_path / "out.json").exists()  # nothing was run
    assert took < BOUND_S


@pytest.mark.parametrize("option", ["--runs", "--size", "--engine", "-o", "--data-dir", "--key-file", "--workload"])
def test_an_empty_value_is_refused_not_the_default(encbench, tmp_path, option):
    argv = ["run", *TINY, "--data-dir", str(tmp_path / "data"), "-o", str(tmp_path / "out.json"), option, ""]
    res, took = timed(encbench, *argv)
    line = assert_one_line_error(res, 2)
    assert "empty value" in line and option in line, line
    assert not (tmp_path / "data").exists() and not (tmp_path / "out.json").exists()


def test_an_empty_item_of_a_list_is_refused(encbench, tmp_path):
    for extra in (["--variant", "cache=cold,,warm"], ["--workload", "scan-eq,,dml"]):
        res = encbench("run", *TINY[:6], *extra, "--data-dir", str(tmp_path / "data"), "-o", str(tmp_path / "o.json"))
        line = assert_one_line_error(res, 2)
        assert "empty value between commas" in line, line
    assert not (tmp_path / "data").exists()


# -- item 9: --workload lists, the noise floor's exit code, free space, SIGTERM, the role's privileges ----

def test_workload_takes_comma_lists_everywhere(encbench, tmp_path):
    """The at-rest hint says `--workload storm,bulk,...`: run, selftest and estimate take it (history: unit test)."""
    missing = tmp_path / "no-such-dir"
    res = encbench("run", "--engine", "postgres", "--workload", "storm,bulk", "-o", str(missing / "x.json"))
    assert "does not exist" in assert_one_line_error(res, 5)  # the plan took both workloads; then the -o check
    res = encbench("selftest", "--workload", "scan-eq,dml", "--save-floor", str(missing / "f.json"))
    assert "does not exist" in assert_one_line_error(res, 5)
    res = encbench("estimate", "--from", str(GOLDEN), "--read-rate", "25MB/s", "--workload", "nope,scan-like", "--json")
    [reads] = [term for term in json.loads(res.stdout)["terms"] if term["name"] == "reads"]
    assert res.returncode == 0 and "scan-like/scan" in reads["cost_source"], str(res)


def test_a_json_file_that_is_no_noise_floor_is_exit_6(encbench):
    line = assert_one_line_error(encbench("compare", str(GOLDEN), str(GOLDEN), "--noise-floor", str(GOLDEN)), 6)
    assert "is not a noise floor file" in line, line


@pytest.fixture
def small_fs(tmp_path):
    """A 16 MiB tmpfs (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "encbench-test", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_free_space_is_checked_before_generating(encbench, small_fs, tmp_path):
    data = small_fs / "data"
    res, took = timed(encbench, "run", "--size", "20MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq",
                      "--data-dir", str(data), "-o", str(tmp_path / "out.json"))
    line = assert_one_line_error(res, 4)
    assert "--size 20 MB (2 database files to generate) needs about 40 MB free in" in line, line
    assert "16.8 MB free there" in line, line  # an empty 16 MiB tmpfs
    assert took < BOUND_S
    assert [p.name for p in data.rglob("*") if p.is_file()] == []  # nothing generated
    assert not (tmp_path / "out.json").exists()


_INTERRUPT_EARLY = """
import os, signal, sys
from encbench.lab import reclaim
claim = reclaim.claim
def interrupted_claim(data_dir, **kw):  # runner.execute's first step: a real SIGTERM lands before it measures anything
    if kw.get("pymp"):
        os.kill(os.getpid(), signal.SIGTERM)
    return claim(data_dir, **kw)
reclaim.claim = interrupted_claim
sys.argv = ["encbench", *sys.argv[1:]]
from encbench.cli.app import entry
entry()
"""


@pytest.mark.parametrize("existing", [False, True], ids=["no-file", "older-file"])
def test_sigterm_before_measuring_does_not_claim_a_result_file(cli_env, sandbox, tmp_path, existing):
    out = tmp_path / "out.json"
    if existing:
        out.write_text("an older file of another run\n")
    cmd = [sys.executable, "-c", _INTERRUPT_EARLY, "run", *TINY, "--data-dir", str(tmp_path / "data"), "-o", str(out)]
    proc = subprocess.run(cmd, cwd=sandbox, env=cli_env, capture_output=True, text=True, timeout=BOUND_S * 3)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.splitlines() == ["encbench: interrupted: nothing measured yet"], proc.stderr
    assert out.exists() == existing and (not existing or out.read_text() == "an older file of another run\n")


def test_sigterm_soon_after_start_says_kept_only_of_a_file_that_exists(cli_env, sandbox, tmp_path):
    """A real SIGTERM 0.3 to 1.5 s after start, wherever it lands: 'kept in X' only when X is there."""
    for i, delay in enumerate((0.3, 0.6, 0.9, 1.2, 1.5)):
        out = tmp_path / f"out{i}.json"
        argv = ["run", *TINY, "--data-dir", str(tmp_path / "data"), "-o", str(out)]
        proc = subprocess.Popen(encbench_command() + argv, cwd=sandbox, env=cli_env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=BOUND_S * 3)
        assert "Traceback" not in err, err
        if f"kept in {out}" in err:
            assert out.exists(), err


@pytest.fixture(scope="module")
def pg_roles():
    """A real server started here, and two ordinary roles: `maker` may CREATE in the database, `guest` may not."""
    with external_pg() as server:
        import psycopg

        with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
            c.execute("CREATE ROLE maker LOGIN PASSWORD 'maker-Pw-5521'")
            c.execute("GRANT CREATE ON DATABASE postgres TO maker")
            c.execute("CREATE ROLE guest LOGIN PASSWORD 'guest-Pw-5521'")
        yield server
        with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
            c.execute("REVOKE CREATE ON DATABASE postgres FROM maker")
            c.execute("DROP ROLE maker")
            c.execute("DROP ROLE guest")


def _pgcrypto_installed(server) -> bool:
    import psycopg

    with psycopg.connect(**server.conninfo(), sslmode="disable") as c:
        return bool(c.execute("SELECT 1 FROM pg_extension WHERE extname = 'pgcrypto'").fetchone())


HASH = ["--sessions", "1", "--function", "digest-sha256", "--rows", "2000", "--runs", "2", "--warmups", "0"]


@needs_pg
def test_an_ordinary_role_with_allow_reconfigure_creates_pgcrypto_when_it_may(encbench, tmp_path, pg_roles):
    """It used to be told to 'pass --allow-reconfigure' (it had): the ssl settings it may not change are no
    reason to refuse the extension it may create (pgcrypto is trusted: CREATE on the database is enough)."""
    dsn = f"postgresql://maker:maker-Pw-5521@127.0.0.1:{pg_roles.port}/postgres"
    out = tmp_path / "maker.json"
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--allow-reconfigure", *HASH, "-o", str(out),
                   timeout=300)
    assert res.returncode == 0, str(res)
    assert "pass --allow-reconfigure" not in res.stderr
    assert {c["function"] for c in json.loads(out.read_text())["hash_costs"]} == {"digest-sha256"}
    assert not _pgcrypto_installed(pg_roles)  # created for the run, dropped after it


@needs_pg
def test_an_ordinary_role_is_told_the_privilege_it_lacks(encbench, tmp_path, pg_roles):
    dsn = f"postgresql://guest:guest-Pw-5521@127.0.0.1:{pg_roles.port}/postgres"
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--allow-reconfigure", *HASH,
                   "-o", str(tmp_path / "g.json"), timeout=300)
    err = res.stderr.splitlines()  # the notes on what this role may not read come first, one line each
    assert res.returncode == 10 and "Traceback" not in res.stderr, str(res)
    errors = [ln for ln in err if ln.startswith("encbench: error:")]
    assert len(errors) == 1 and all(ln.startswith(("encbench: error:", "encbench: note:")) for ln in err), str(res)
    line = errors[0]
    assert "no CREATE privilege on database postgres" in line and "GRANT CREATE ON DATABASE postgres TO guest" in line
    assert "pass --allow-reconfigure" not in line and "guest-Pw-5521" not in res.stderr
    assert not (tmp_path / "g.json").exists() and not _pgcrypto_installed(pg_roles)
