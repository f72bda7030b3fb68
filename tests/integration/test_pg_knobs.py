"""Issue 24 on PostgreSQL against real servers: each knob applied as a DBA would and proven per run (the key
exchange group from a handshake, a connection per transaction from the sessions the server counted, the filesystem's
cipher from the mounted filesystem); what this server or kernel cannot run is one line; `encbench advise --quick`
ranks the sweeps, --from ranks kept files; a --dsn advise leaves the server exactly as it was; an interrupted advise
leaves no server, no mount, no key file and a --dsn server as found.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import psutil
import pytest

from encbench.engines.postgres import knobs, server as pg_server
from encbench.host import encfs, memcg
from encbench.host.encfs import ledger
from integration_helpers import (assert_one_line_error, encfs_unavailable, external_pg, needs_pg, orphan_keys,
                                 temp_dir)
from server_state import diff, journals, pg_state, start_encbench

pytestmark = [pytest.mark.integration, needs_pg]

TINY = ("--quick", "--runs", "1", "--warmups", "0")
MOUNTS = encfs_unavailable(("plain", "gocryptfs"))
needs_mounts = pytest.mark.skipif(MOUNTS is not None, reason=f"encrypted filesystems unavailable: {MOUNTS}")


def _version() -> tuple[int, str]:
    return pg_server.binary_version()


def _dsn(server) -> str:
    return f"postgresql://postgres:{server.password}@127.0.0.1:{server.port}/postgres"


def _runs(path: Path) -> list[dict]:
    return [r for r in json.loads(path.read_text())["runs"] if not r.get("warmup")]


@pytest.fixture
def open_dir():
    """A data directory the server (user postgres) can reach: pytest's own are private to root (0700)."""
    d = Path(tempfile.mkdtemp(prefix="encbench-pgknob-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _ours(root: Path) -> dict:
    """What a run in `root` could leave: mounts, ledger records, key directories, processes naming it."""
    prefix = str(root.resolve()) + "/"
    return {"mounts": [mp for _, mp, _ in ledger.mounts() if mp.startswith(prefix)],
            "records": [r["id"] for r in ledger.records() if r["workdir"].startswith(prefix)],
            "orphan_keys": orphan_keys(),
            "procs": [p.pid for p in psutil.process_iter(["cmdline"])
                      if any(prefix in a for a in (p.info.get("cmdline") or [])) and p.pid != os.getpid()]}


def _postgres_since(t0: float, *roots: Path) -> list[int]:
    """PostgreSQL server processes started after t0 and still running (a private server left behind) whose
    postmaster's command line (its own, or its parent's for a backend) names a path in `roots` or in this process's
    temporary directory: not a server of another test process running meanwhile."""
    prefixes = [str(temp_dir()) + "/"] + [str(r.resolve()) + "/" for r in roots]
    out = []
    for p in psutil.process_iter(["name", "create_time"]):
        if (p.info.get("name") or "").startswith("postgres") and (p.info.get("create_time") or 0) >= t0:
            try:
                lines = [" ".join(q.cmdline()) for q in [p, *p.parents()]]
            except psutil.Error:
                continue
            if any(prefix in line for line in lines for prefix in prefixes):
                out.append(p.pid)
    return out


# -- the key exchange group --------------------------------------------------------------------------------------

def test_the_key_exchange_group_is_set_and_proven_per_run(advised):
    """The advise fixture's key exchange group sweep (`tls=on`, `ecdh_curve=` each group this server takes, on
    connect): an ordinary run's file, every run proven."""
    out = advised.sweeps / "advise-ecdh-curve.json"
    num, version = _version()
    want = {c for c in knobs.SWEEP_CURVES if knobs.curve_unavailable(c, num, version) is None}
    assert {"prime256v1", "secp384r1"} <= want
    runs = _runs(out)
    assert {r["variant"]["ecdh_curve"] for r in runs} == want
    for r in runs:
        proof = r["session"]["ecdh"]  # the group a handshake of this run negotiated, the server's setting beside it
        assert proof["negotiated_group"] == proof["curve"] == r["variant"]["ecdh_curve"] == proof["setting_shows"]
        assert r["server_config"][proof["setting"]] == r["variant"]["ecdh_curve"]
    assert json.loads(out.read_text())["dataset"]["original_ecdh_setting"] == knobs.DEFAULT_CURVE


def test_a_group_this_server_version_cannot_take_is_one_line(encbench, tmp_path):
    num, version = _version()
    if knobs.curve_unavailable("X25519", num, version) is None:
        pytest.skip(f"PostgreSQL {version} takes X25519 (ssl_groups)")
    line = assert_one_line_error(encbench("run", "--engine", "postgres", "--workload", "connect", *TINY,
                                          "--variant", "tls=on", "--variant", "ecdh_curve=X25519",
                                          "-o", str(tmp_path / "x.json")), 10)
    assert f"not available in PostgreSQL {version}" in line and "ssl_groups" in line


@pytest.fixture(scope="module")
def dsn_pg():
    with external_pg() as server:
        yield server


def test_on_dsn_the_group_needs_allow_reconfigure_and_is_restored_byte_for_byte(encbench, tmp_path, dsn_pg,
                                                                                 cli_env):
    before = pg_state(dsn_pg)
    args = ("run", "--engine", "postgres", "--dsn", _dsn(dsn_pg), "--workload", "connect", *TINY, "--param",
            "connections=3", "--variant", "tls=on", "--variant", "ecdh_curve=secp384r1,secp521r1")
    line = assert_one_line_error(encbench(*args, "-o", str(tmp_path / "a.json")), 2)
    assert "--allow-reconfigure" in line and dsn_pg.password not in line
    res = encbench(*args, "--allow-reconfigure", "-o", str(tmp_path / "b.json"))
    assert res.returncode == 0, str(res)
    assert {r["session"]["ecdh"]["negotiated_group"] for r in _runs(tmp_path / "b.json")} == {"secp384r1", "secp521r1"}
    assert diff(before, pg_state(dsn_pg)) == {}
    assert journals(cli_env) == []


def test_a_role_that_may_not_change_the_group_is_told_which_privilege_would(encbench, tmp_path, dsn_pg, cli_env):
    import psycopg

    with psycopg.connect(**dsn_pg.conninfo(), sslmode="disable", autocommit=True) as c:
        c.execute("CREATE ROLE encbench_knob LOGIN PASSWORD 'pw-knob' NOSUPERUSER")
    try:
        before = pg_state(dsn_pg)
        line = assert_one_line_error(encbench(
            "run", "--engine", "postgres", "--dsn", f"postgresql://encbench_knob:pw-knob@127.0.0.1:{dsn_pg.port}/postgres",
            "--allow-reconfigure", "--workload", "connect", *TINY, "--variant", "tls=on", "--variant",
            "ecdh_curve=secp384r1", "-o", str(tmp_path / "r.json")), 10)
        assert "GRANT ALTER SYSTEM ON PARAMETER ssl_ecdh_curve TO encbench_knob" in line and "pw-knob" not in line
        assert diff(before, pg_state(dsn_pg)) == {} and journals(cli_env) == []
    finally:
        with psycopg.connect(**dsn_pg.conninfo(), sslmode="disable", autocommit=True) as c:
            c.execute("DROP ROLE encbench_knob")


# -- a connection per transaction or reused ----------------------------------------------------------------------

def test_a_connection_per_transaction_is_proven_by_the_server(advised):
    """The advise fixture's connection sweep (`oltp`, `tls=on`, `memory=100%`, `connection=per-transaction,reused`,
    --quick's 2 s windows): every run proven by the sessions the server counted."""
    seen = set()
    for r in _runs(advised.sweeps / "advise-connection.json"):
        extra = r["operations"][0]["extra"]
        seen.add(r["variant"]["connection"])
        assert r["session"]["tls"]["ssl"] and extra["tls_checked_connections"] >= 1
        if r["variant"]["connection"] == "per-transaction":
            assert extra["sessions_opened"] >= extra["transactions"] > 0 and "average_connection_ms" in extra
            assert "-C" in extra["driver"].split()
        else:
            assert extra["sessions_opened"] * 2 < extra["transactions"] and "-C" not in extra["driver"].split()
    assert seen == {"per-transaction", "reused"}


# -- the filesystem's cipher -------------------------------------------------------------------------------------

@needs_mounts
def test_each_gocryptfs_cipher_runs_its_own_cluster_proven_per_run(advised):
    """The advise fixture's gocryptfs cipher sweep (`encryption=gocryptfs`, `gocryptfs_cipher=aes-gcm,xchacha,aessiv`,
    cold scans, 2 MB): a cluster per cipher, each run's own cipher read back from its mount."""
    out = advised.sweeps / "advise-gocryptfs-cipher.json"
    doc = json.loads(out.read_text())
    clusters = doc["dataset"]["clusters"]
    assert set(clusters) == {"gocryptfs", "gocryptfs-xchacha", "gocryptfs-aessiv"}
    assert clusters["gocryptfs-xchacha"]["cipher"]["content_encryption"] == "XChaCha20-Poly1305"
    assert clusters["gocryptfs"]["cipher"]["content_encryption"] == "AES-GCM-256"
    assert len({c["mount_point"] for c in clusters.values()}) == 3
    assert any("gocryptfs_cipher=xchacha: XChaCha20-Poly1305" in n for n in doc["dataset"]["cipher_notes"])
    assert "AES-GCM-256" in " ".join(doc["dataset"]["gocryptfs_speed"]["reported_mb_s"])
    want = {"aes-gcm": "AES-GCM-256", "xchacha": "XChaCha20-Poly1305", "aessiv": "AES-SIV-512"}
    seen = set()
    for r in _runs(out):
        got = r["session"]["filesystem"]["options"]  # gocryptfs -info of the run's own cipher directory
        assert got["cipher"] == r["variant"]["gocryptfs_cipher"], (got, r["variant"])
        assert got["content_encryption"] == want[got["cipher"]], got
        seen.add(got["cipher"])
    assert seen == {"aes-gcm", "xchacha", "aessiv"}
    assert _ours(advised.data)["mounts"] == [] and _ours(advised.data)["records"] == []


@needs_mounts
def test_an_fscrypt_policy_this_kernel_lacks_is_one_line(encbench, tmp_path, open_dir):
    why = encfs.fscrypt_policy_unavailable("adiantum")
    if why is None:
        pytest.skip("this kernel encrypts with Adiantum")
    line = assert_one_line_error(encbench("run", "--engine", "postgres", "--workload", "scan-eq", *TINY, "--variant",
                                          "encryption=fscrypt", "--variant", "fscrypt_policy=adiantum",
                                          "--data-dir", str(open_dir), "-o", str(tmp_path / "f.json")), 20)
    assert "fscrypt_policy=adiantum: not available in kernel" in line
    assert _ours(open_dir) == {"mounts": [], "records": [], "orphan_keys": [], "procs": []}


# -- encbench advise ---------------------------------------------------------------------------------------------

PRIVATE_KNOBS = ("ecdh_curve", "connection", "gocryptfs_cipher", "fscrypt_policy")


class Advised(NamedTuple):
    out: dict  # its JSON
    res: object  # the finished command (its stderr)
    sweeps: Path  # the sweeps' result files
    data: Path  # its --data-dir (the at-rest clusters' mounts were below it)


@pytest.fixture(scope="module")
def advised(encbench, tmp_path_factory):
    """advise --engine postgres --quick on private servers, the knobs only a server encbench starts can sweep here
    (the key exchange group, a connection per transaction or reused, the gocryptfs cipher); its sweeps' files are also
    what the tests of those knobs above read (one advise measures them all). The TLS suites (the one knob a --dsn
    server sweeps too, and the longest sweep: 4 values x 2 workloads) are advised on the --dsn server below
    (test_a_dsn_advise_leaves_the_server_exactly_as_it_was, the same sweep) and ranked at 6 runs per value by the
    SQLite and MariaDB advise tests (test_advise.py, test_advise_mariadb.py)."""
    data = Path(tempfile.mkdtemp(prefix="encbench-pgadvise-", dir="/tmp"))
    data.chmod(0o755)  # the at-rest clusters' server (user postgres) reaches its mounts below
    out = tmp_path_factory.mktemp("advise")
    try:
        res = encbench("advise", "--engine", "postgres", "--quick", "--knob", ",".join(PRIVATE_KNOBS), "--size", "2MB",
                       "--warmups", "0", "--data-dir", str(data), "-o", str(out / "sweeps"), "--json", timeout=1200)
        assert res.returncode == 0, str(res)
        yield Advised(json.loads(res.stdout), res, out / "sweeps", data)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def test_advise_quick_ranks_every_knob_measured_here(advised):
    out, res = advised.out, advised.res
    entries = out["entries"]
    keys = {(e["key"], e["value"]) for e in entries}
    assert {("ecdh_curve", "secp384r1"), ("connection", "reused")} <= keys and "tls" not in {k for k, _ in keys}
    if MOUNTS is None:
        assert {("gocryptfs_cipher", "xchacha"), ("gocryptfs_cipher", "aessiv")} <= keys
    for e in entries:
        assert e["value"] != e["default"] and e["n"] >= 6, e
        assert e["ratio"] is None or e["ci"][0] <= e["ratio"] <= e["ci"][1], e
        if e["standing"].startswith("saves") and e["weakens"]:
            assert e["standing"] == "saves, gives up protection" and e["gives_up"], e  # never a plain win
        if e["rank"] is None:
            assert not e["standing"].startswith("saves"), e
    pooled = next(e for e in entries if e["key"] == "connection")
    assert pooled["standing"] == "saves" and pooled["rank"] == 1 and pooled["ratio"] < 0.5  # a pooler's saving
    num, version = _version()
    if knobs.curve_unavailable("X25519", num, version):
        assert f"advise: ecdh_curve=X25519: not available in PostgreSQL {version}" in res.stderr
    if MOUNTS is None and all(encfs.fscrypt_policy_unavailable(p) for p in ("adiantum", "aes-128-cbc")):
        assert "advise: fscrypt_policy: not available: only aes-256-xts runs here" in res.stderr
    assert "Traceback" not in res.stderr


def test_advise_from_the_kept_files_and_the_report(encbench, advised, tmp_path):
    files = sorted(str(p) for p in advised.sweeps.glob("advise-*.json"))
    assert {Path(f).name for f in files} >= {"advise-ecdh-curve.json", "advise-connection.json"}
    res = encbench("advise", *[x for f in files for x in ("--from", f)])
    assert res.returncode == 0, str(res)
    text = res.stdout
    assert text.startswith("What makes encryption cheaper here:")
    assert "connection per transaction or reused (a pooler) reused (default per-transaction): saves" in text
    assert "key exchange group secp384r1 (default prime256v1)" in text and "negotiated secp384r1" in text


def test_a_dsn_advise_leaves_the_server_exactly_as_it_was(encbench, tmp_path, dsn_pg, cli_env):
    before = pg_state(dsn_pg)
    res = encbench("advise", "--engine", "postgres", "--quick", "--runs", "1", "--warmups", "0", "--dsn",
                   _dsn(dsn_pg), "--allow-reconfigure", "-o", str(tmp_path / "sweeps"), "--json", timeout=600)
    assert res.returncode == 0, str(res)
    assert "gocryptfs_cipher not swept:" in res.stderr and dsn_pg.password not in res.stdout + res.stderr
    entries = json.loads(res.stdout)["entries"]
    assert {e["key"] for e in entries} >= {"tls", "ecdh_curve", "connection"}
    assert diff(before, pg_state(dsn_pg)) == {}
    assert journals(cli_env) == []
    # the TLS suites (the private advise above leaves them to this one): each value forced, off never a plain win
    suites = [e for e in entries if e["key"] == "tls"]
    assert {e["value"] for e in suites} == set(knobs.QUICK_TLS) - {"on"}, suites
    for e in suites:
        assert e["value"] != e["default"] == "on" and e["n"] >= 1, e
        if e["standing"].startswith("saves") and e["weakens"]:
            assert e["standing"] == "saves, gives up protection" and e["gives_up"], e  # never a plain win
        if e["value"] == "off":
            assert e["weakens"] and e["gives_up"] and e["standing"] != "saves", e
    forced = [r for r in _runs(tmp_path / "sweeps" / "advise-tls.json") if r["variant"]["tls"].startswith("TLSv1.2:")]
    assert forced and all(r["session"]["tls"]["cipher"] == r["variant"]["tls"].split(":", 1)[1] for r in forced)
    text = encbench("advise", "--from", str(tmp_path / "sweeps" / "advise-tls.json"))
    assert text.returncode == 0 and "TLS protocol and suite off (default on)" in text.stdout, str(text)


def _interrupt_when(args: list[str], cli_env: dict, cwd: Path, ready, timeout: float = 300) -> tuple[int, str]:
    proc = start_encbench(args, cli_env, cwd)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, f"advise ended (exit {proc.returncode}) too early: {proc.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline, "advise never reached the state to interrupt"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stderr


def test_an_advise_interrupted_while_the_dsn_server_runs_another_group_restores_it(tmp_path, dsn_pg, cli_env):
    import psycopg

    before = pg_state(dsn_pg)

    def reconfigured() -> bool:
        with psycopg.connect(**dsn_pg.conninfo(), sslmode="disable", autocommit=True) as c:
            return c.execute("SHOW ssl_ecdh_curve").fetchone()[0] != knobs.DEFAULT_CURVE

    code, stderr = _interrupt_when(["advise", "--engine", "postgres", "--quick", "--knob", "ecdh_curve", "--runs", "3",
                                    "--warmups", "0", "--dsn", _dsn(dsn_pg), "--allow-reconfigure",
                                    "-o", str(tmp_path / "s")],
                                   cli_env, tmp_path, reconfigured)
    assert code == 130 and "Traceback" not in stderr, stderr
    assert "the sweeps so far are kept" in stderr
    assert diff(before, pg_state(dsn_pg)) == {}
    assert journals(cli_env) == []


@needs_mounts
def test_an_advise_interrupted_on_its_mounts_leaves_no_server_mount_or_key(tmp_path, open_dir, cli_env):
    t0 = time.time()
    groups_before = {r["path"] for _, r in memcg.records()}
    code, stderr = _interrupt_when(["advise", "--engine", "postgres", "--quick", "--knob", "gocryptfs_cipher", "--runs",
                                    "2", "--warmups", "0", "--size", "2MB", "--data-dir", str(open_dir),
                                    "-o", str(tmp_path / "s")],
                                   cli_env, tmp_path, lambda: bool(_ours(open_dir)["mounts"]), timeout=600)
    assert code == 130 and "Traceback" not in stderr, stderr
    assert _ours(open_dir) == {"mounts": [], "records": [], "orphan_keys": [], "procs": []}
    assert _postgres_since(t0, open_dir) == []  # the private servers of every sweep stopped
    assert {r["path"] for _, r in memcg.records()} <= groups_before
    assert not list(open_dir.glob("encfs-*"))
