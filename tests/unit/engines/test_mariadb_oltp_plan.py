"""Unit tests of the MariaDB oltp workload's pure parts: sysbench's output and command lines (engines/mariadb/
sysbench.py), the pool sizing, the variant checks, the report table's axis and the --dsn memory key
(engines/mariadb/oltp.py, engine.py), the runner asking the engine for both. No server, no sysbench."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from encbench.engines import ENGINES
from encbench.engines.mariadb import oltp as mo
from encbench.engines.mariadb import sysbench as sb
from encbench.errors import CheckFailedError, RunFailedError, UsageError
from encbench.lab import runner
from encbench.vocab.variants import matrix, parse_filters

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "sysbench"


# -- sysbench's report --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["oltp_read_only_histogram.txt", "oltp_point_select_histogram.txt"])
def test_real_report_percentiles_are_sysbench_own(name):
    """A report sysbench 1.0.20 printed here: every transaction in the histogram, and the 95th percentile
    computed from it is the one sysbench printed itself."""
    out = (FIXTURES / name).read_text()
    got = sb.summary(out)
    assert got["transactions"] == sum(n for _, n in sb.histogram(out)) > 0
    assert round(got["latency_p95_ms"], 2) == got["sysbench_p95_ms"]  # sysbench prints two decimals
    assert got["latency_p50_ms"] <= got["latency_p95_ms"] <= got["latency_p99_ms"]
    assert got["tps"] == pytest.approx(got["transactions"] / got["sysbench_seconds"])
    assert got["tps"] == pytest.approx(got["sysbench_tps"], rel=0.01)
    assert got["ignored_errors"] == 0 and got["reconnects"] == 0


def test_percentile_is_the_first_bucket_reaching_the_share():
    buckets = [(1.0, 50), (2.0, 45), (3.0, 4), (9.5, 1)]
    assert [sb.percentile(buckets, q) for q in (50, 95, 99, 100)] == [1.0, 2.0, 3.0, 9.5]
    assert sb.percentile([], 95) is None
    # the share of the count rounded to a whole transaction, as sysbench does: 95% of 199 = 189.05 -> 189
    assert sb.percentile([(1.0, 189), (2.0, 10)], 95) == 1.0


def test_report_without_transactions_or_with_a_short_histogram_is_refused():
    with pytest.raises(RunFailedError, match="no transaction count"):
        sb.summary("FATAL: something\n")
    out = (FIXTURES / "oltp_read_only_histogram.txt").read_text()
    cut = "\n".join(line for line in out.splitlines() if "|*" not in line or not line.strip().startswith("0."))
    with pytest.raises(RunFailedError, match="histogram counts"):
        sb.summary(cut)


def test_failure_keeps_the_client_library_line_redacted():
    err = ("FATAL: unable to connect to MySQL server on host '127.0.0.1', port 3306, aborting...\n"
           "FATAL: error 2026: TLS/SSL error: tlsv1 alert unknown ca\n"
           "FATAL: `thread_init' function failed: /usr/share/sysbench/oltp_common.lua:349: "
           "connection creation failed\n")
    assert sb.last_error(err) == "FATAL: error 2026: TLS/SSL error: tlsv1 alert unknown ca"
    e = sb.failure("run", "FATAL: mysql://encbench:hunter22@127.0.0.1:3306/x went away\n")
    assert "hunter22" not in e.one_line() and e.exit_code == 11
    assert sb.last_error("", "") == "no output"


# -- its command lines and working directory ----------------------------------------------

def test_workdir_keeps_the_password_in_a_private_file(tmp_path):
    w = sb.Workdir(tmp_path / "sb", "/usr/bin/sysbench", sb.Address("127.0.0.1", 3307, "encbench", "s3cret-pw"),
                   "db_enc", 4, 5000)
    assert stat.S_IMODE(w.config.stat().st_mode) == 0o600 and "s3cret-pw" in w.config.read_text()
    run = w.run_command("oltp_read_write", "off", 2, 10)
    assert not any("s3cret-pw" in a for a in run)
    assert {"--threads=2", "--time=10", "--rand-type=uniform", "--histogram=on", "--tables=4", "--table-size=5000",
            "--mysql-db=db_enc", "--mysql-ssl=off", "oltp_read_write", "run"} <= set(run)
    shown = sb.described(run)
    assert shown.startswith("sysbench --db-driver=mysql") and "config-file" not in shown and str(tmp_path) not in shown
    prep = w.prepare_command("on", 2)
    assert prep[-1] == "prepare" and Path(prep[-2]).read_text().startswith(
        'mysql_table_options = "ENCRYPTED=YES ENCRYPTION_KEY_ID=1"')
    assert 'ENCRYPTED=NO"' in Path(w.prepare_command("off", 2)[-2]).read_text()


def test_tls_files_and_options(tmp_path):
    files = {}
    for name in ("cert", "key", "ca"):
        files[name] = tmp_path / name
        files[name].write_text(f"-----{name}-----\n")
    w = sb.Workdir(tmp_path / "sb", "sysbench", sb.Address("127.0.0.1", 1, "u", "p"), "db", 4, 1000)
    w.with_tls(files)
    assert (w.dir / "client-key.pem").read_text() == "-----key-----\n"
    assert stat.S_IMODE((w.dir / "client-key.pem").stat().st_mode) == 0o600
    assert (w.dir / "cacert.pem").read_text() == "-----ca-----\n"
    assert sb.tls_args("off") == ["--mysql-ssl=off"]
    assert sb.tls_args("on") == ["--mysql-ssl=on"]
    assert sb.tls_args("TLSv1.2:ECDHE-RSA-AES256-SHA384") == ["--mysql-ssl=on",
                                                             "--mysql-ssl-cipher=ECDHE-RSA-AES256-SHA384"]
    assert sb.tls_args("TLSv1.3:TLS_AES_128_GCM_SHA256") == ["--mysql-ssl=on"]  # OPENSSL_CONF pins it
    conf = sb.openssl_conf("TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384")  # no option for the protocol: the config's
    assert "CipherString = ECDHE-RSA-AES256-GCM-SHA384" in conf and "MaxProtocol = TLSv1.2" in conf
    assert "Ciphersuites = TLS_AES_128_GCM_SHA256" in sb.openssl_conf("TLSv1.3:TLS_AES_128_GCM_SHA256")
    assert sb.openssl_conf("on") is None and sb.openssl_conf("off") is None


def test_rows_per_table_follow_the_size():
    assert sb.rows_per_table(1) == sb.MIN_ROWS
    rows = sb.rows_per_table(48 << 20)
    assert abs(rows * sb.TABLES * sb.ROW_BYTES - (48 << 20)) < sb.TABLES * sb.ROW_BYTES


# -- the pool, the variants, the table ----------------------------------------------------

def test_pool_holds_the_share_beside_innodb_own_pages():
    data, overhead, usable = 24_444_928, 6_176_768, 0.990234375
    for share in (1.0, 0.25, 0.05):
        pool = mo.pool_bytes_for(share, data, overhead, usable)
        assert pool % (1 << 20) == 0
        held = pool * usable - overhead
        assert share * data <= held < share * data + (1 << 20)


def test_oltp_variants_checked():
    ok = [{"encryption": e, "script": "oltp_read_only", "memory": "25%"} for e in ("off", "on")]
    mo.check_variants(ok)
    with pytest.raises(UsageError, match="not encryption=fscrypt"):
        mo.check_variants(ok + [{"encryption": "fscrypt", "script": "oltp_read_only"}])
    both = [dict(v, tls=t) for v in ok for t in ("off", "on")]
    with pytest.raises(UsageError, match="encryption or tls, not both") as e:
        mo.check_variants(both)
    assert e.value.exit_code == 2 and "\n" not in e.value.one_line()
    tls = [dict(ok[0], tls=t) for t in ("off", "on")]
    mo.check_variants(tls)
    with pytest.raises(UsageError, match="--dsn"):
        mo.check_variants(tls, dsn=True)
    mo.check_variants(ok, dsn=True)


def test_default_oltp_matrix_varies_encryption_and_memory_only():
    engine = ENGINES.get("mariadb")
    keys = engine.variant_keys
    assert matrix(keys, {}, "oltp") == [{"encryption": e, "script": "oltp_read_only", "memory": m}
                                        for e in ("off", "on") for m in ("100%", "25%")]
    named = matrix(keys, parse_filters(["tls=off,on", "encryption=off", "clients=2"], keys), "oltp")
    assert {(v["tls"], v["clients"]) for v in named} == {("off", "2"), ("on", "2")}
    with pytest.raises(Exception) as e:
        parse_filters(["script=tpcb-like"], keys)
    assert e.value.exit_code == 3
    with pytest.raises(Exception) as e:
        parse_filters(["memory=150%"], keys)
    assert e.value.exit_code == 4


def test_report_table_compares_the_axis_the_run_varies():
    engine = ENGINES.get("mariadb")
    base = [{"encryption": "off", "script": "oltp_read_only"}, {"encryption": "on", "script": "oltp_read_only"}]
    tls = [{"encryption": "off", "tls": t, "script": "oltp_read_only"} for t in ("off", "on")]
    for variants, axis in ((base, "encryption"), (tls, "tls"), (tls + [{"encryption": "on", "cache": "cold"}], "tls")):
        tables = engine.run_tables({"oltp": variants})
        assert [t.axis for t in tables if t.workloads == ("oltp",)] == [axis]
        assert [t.axis for t in tables if t.workloads != ("oltp",)] == ["encryption", "tls", "sessions", "method"]


def test_dsn_runs_vary_no_memory_and_refuse_one():
    engine = ENGINES.get("mariadb")
    dsn = {"dsn": "mysql://u@db.example/x"}
    dsn_keys = engine.plan_keys(engine.variant_keys, {}, ["oltp"], dsn)
    assert engine.plan_keys(engine.variant_keys, {}, ["oltp"], {}) == engine.variant_keys
    assert all("memory" not in v for v in matrix(dsn_keys, {}, "oltp"))
    with pytest.raises(UsageError, match="does not change a --dsn server's memory") as e:
        parse_filters(["memory=25%"], dsn_keys)
    assert e.value.exit_code == 2
    with pytest.raises(UsageError, match="does not change a --dsn server's memory"):  # as the runner plans it
        engine.plan_keys(engine.variant_keys, {"memory": ["25%"]}, ["oltp"], dsn)


def _config(**kw) -> runner.RunConfig:
    return runner.RunConfig(engine="mariadb", workloads=["oltp"], runs=2, warmups=0, size_bytes=1 << 20, seed=1,
                            output=Path("out.json"), data_dir=Path("data"), probes=["wall"], **kw)


def test_runner_takes_the_run_keys_and_tables_from_the_engine():
    p = runner.plan(_config(variant_filters=[], engine_options={"dsn": "mysql://u@db.example/x"}))
    assert p.variants == [{"encryption": e, "script": "oltp_read_only"} for e in ("off", "on")]
    with pytest.raises(UsageError, match="--dsn server's memory"):
        runner.plan(_config(variant_filters=["memory=25%"], engine_options={"dsn": "mysql://u@db.example/x"}))
    p = runner.plan(_config(variant_filters=["tls=off,on", "encryption=on", "memory=25%"]))
    doc = runner.new_document(_config(variant_filters=[]), p, {})
    assert [t["axis"] for t in doc["engine"]["tables"] if t["workloads"] == ["oltp"]] == ["tls"]
    assert "memory" in [k["name"] for k in doc["engine"]["variant_keys"]]


# -- the server's view of sysbench's connections ------------------------------------------

class _Cursor:
    def __init__(self, rows):
        self.rows = rows

    def execute(self, sql, params=()):
        self.sql, self.params = sql, params

    def fetchall(self):
        return self.rows


class _Conn:
    def __init__(self, rows):
        self.rows = rows

    def cursor(self):
        return _Cursor(self.rows)

    def thread_id(self):
        return 7


class _Proc:
    def __init__(self, done=False):
        self.done, self.killed = done, False

    def poll(self):
        return 0 if self.done else None

    def kill(self):
        self.killed = True


def _watcher(rows, tls, ps="ON"):
    s = mo.MariaOltp()
    s.conn, s.tls, s.oltp_schema = _Conn(rows), tls, "db_enc"
    s.setup = {"server": {"performance_schema": ps}}
    return s


def test_every_sysbench_connection_checked_from_the_server_view():
    rows = [(11, "Ssl_version", "TLSv1.3"), (11, "Ssl_cipher", "TLS_AES_256_GCM_SHA384"),
            (12, "Ssl_version", "TLSv1.3"), (12, "Ssl_cipher", "TLS_AES_256_GCM_SHA384")]
    states = _watcher(rows, "on")._watch_sysbench_tls(_Proc(), 2)
    assert {s["cipher"] for s in states} == {"TLS_AES_256_GCM_SHA384"} and len(states) == 2
    with pytest.raises(CheckFailedError, match="Ssl_cipher"):
        _watcher([(11, "Ssl_version", ""), (11, "Ssl_cipher", "")], "on")._watch_sysbench_tls(_Proc(), 1)
    with pytest.raises(CheckFailedError):
        _watcher(rows[:2], "off")._watch_sysbench_tls(_Proc(), 1)
    assert _watcher([], "on")._watch_sysbench_tls(_Proc(done=True), 1) == []  # sysbench ended first: its own error
    assert _watcher([], "off", ps="OFF")._watch_sysbench_tls(_Proc(), 1) is None
    with pytest.raises(CheckFailedError, match="performance_schema"):
        _watcher([], "on", ps="OFF")._watch_sysbench_tls(_Proc(), 1)


def test_missing_sysbench_is_one_line_with_the_install_command(monkeypatch):
    monkeypatch.setattr(sb.shutil, "which", lambda name: None)
    with pytest.raises(Exception) as e:
        sb.binary()
    assert e.value.exit_code == 10 and "apt-get install sysbench" in e.value.one_line()


def test_a_killed_sysbench_says_so():
    e = sb.failure("oltp_read_only run", "", "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n", -9)
    assert str(e) == "sysbench failed (oltp_read_only run): killed by signal 9"


def test_tls_seen_names_what_the_server_reports():
    on = {"ssl": True, "version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384"}
    assert mo.tls_seen([on, dict(on)]) == "TLSv1.3 TLS_AES_256_GCM_SHA384"
    assert mo.tls_seen([{"ssl": False, "version": None, "cipher": None}]) == "off"


def test_a_data_set_too_small_for_the_pool_steps_grows_and_says_so():
    quick = [{"encryption": "on", "script": "oltp_read_only", "memory": m} for m in ("100%", "25%")]
    size, note = mo.size_for(6_000_000, quick)
    assert size > 6_000_000 and "not --size 6 MB" in note and "1.05 MB steps" in note
    # a pool rounded up by one step is within the tolerance of the smallest share
    assert mo.POOL_STEP <= mo.POOL_TOLERANCE * 0.25 * mo.data_bytes_for(size)
    assert mo.size_for(48_000_000, quick) == (48_000_000, None)
    assert mo.size_for(1_000_000, [{"encryption": "on", "script": "oltp_read_only"}]) == (1_000_000, None)  # --dsn
