"""Issue 24, MariaDB's knobs (engines/mariadb/knobs.py): the pure parts, with fake cursors (the real servers:
tests/integration/test_advise_mariadb.py)."""

from __future__ import annotations

import pytest

from encbench.engines import ENGINES
from encbench.engines.mariadb import knobs
from encbench.errors import BadValueError, CheckFailedError, UsageError
from encbench.vocab.variants import matrix, parse_filters


class FakeCursor:
    def __init__(self, values: dict):
        self.values, self.asked, self._row = values, [], None

    def execute(self, sql: str, params=()):
        name = sql.rsplit(".", 1)[1]
        self.asked.append(name)
        self._row = (self.values[name],)

    def fetchone(self):
        return self._row


def test_each_named_knob_is_read_back_and_a_mismatch_fails_the_run():
    v = {"encryption": "on", "encrypt_binlog": "off", "encryption_algorithm": "aes_cbc"}
    good = FakeCursor({"encrypt_binlog": 0, "log_bin": 1, "file_key_management_encryption_algorithm": "aes_cbc"})
    assert knobs.read_back(good, v) == {"file_key_management_encryption_algorithm": "AES_CBC",
                                        "encrypt_binlog": "OFF", "log_bin": "ON"}
    bad = FakeCursor({"encrypt_binlog": 1, "log_bin": 1, "file_key_management_encryption_algorithm": "AES_CBC"})
    with pytest.raises(CheckFailedError, match="encrypt_binlog is ON, not OFF"):
        knobs.read_back(bad, v)
    no_binlog = FakeCursor({"encrypt_binlog": 0, "log_bin": 0, "file_key_management_encryption_algorithm": "AES_CBC"})
    with pytest.raises(CheckFailedError, match="log_bin is OFF, not ON"):
        knobs.read_back(no_binlog, v)
    nothing = FakeCursor({})
    assert knobs.read_back(nothing, {"encryption": "on", "tls": "on"}) == {} and nothing.asked == []


def test_the_files_a_knob_encrypts_must_be_written_during_the_operation():
    v = {"encrypt_log": "off", "encrypt_tmp_files": "on"}
    assert knobs.check_written(v, {"redo_bytes_written": 4096, "tmp_files_created": 3}) == {
        "encrypt_log_proven": 1, "encrypt_tmp_files_proven": 1}
    with pytest.raises(CheckFailedError, match="no redo log bytes") as e:
        knobs.check_written(v, {"redo_bytes_written": 0, "tmp_files_created": 3})
    assert "oltp_read_write" in e.value.hint
    with pytest.raises(CheckFailedError, match="no temporary files"):
        knobs.check_written({"encrypt_tmp_files": "off"}, {"tmp_files_created": 0})
    assert knobs.check_written({"encryption": "on"}, {"redo_bytes_written": 0}) == {}


def test_a_server_per_configuration_the_first_on_the_main_server():
    base = {"file_key_management_encryption_algorithm": "AES_CTR", "encrypt_binlog": "ON"}
    algo = [{"encryption": "off"}, {"encryption": "on", "encryption_algorithm": "aes_cbc"},
            {"encryption": "on", "encryption_algorithm": "aes_ctr"}]
    assert knobs.server_groups(algo, base) == [
        (["", "encryption_algorithm=aes_ctr"], {}),  # AES_CTR is the base's: the main server runs both
        (["encryption_algorithm=aes_cbc"], {"file_key_management_encryption_algorithm": "AES_CBC"})]
    binlog = [{"encrypt_binlog": "on"}, {"encrypt_binlog": "off"}]
    groups = knobs.server_groups(binlog, base)
    assert [keys for keys, _ in groups] == [["encrypt_binlog=on"], ["encrypt_binlog=off"]]
    assert all(s["log_bin"] == "binlog" for _, s in groups)  # the binary log on for both values
    assert knobs.server_groups([{"encryption": "on"}], base) == [([""], {})]


def test_a_setting_and_a_knob_may_not_set_the_same_variable():
    with pytest.raises(UsageError, match="both set innodb_encrypt_log"):
        knobs.check_settings({"innodb_encrypt_log": "OFF"}, [{"encrypt_log": "on"}])
    with pytest.raises(UsageError, match="both set log_bin"):
        knobs.check_settings({"log_bin": "x"}, [{"encrypt_binlog": "on"}])
    knobs.check_settings({"innodb_encrypt_log": "OFF"}, [{"encrypt_binlog": "on"}])


def test_a_version_without_a_knob_says_so_and_its_sweep_is_left_out():
    missing = knobs.unavailable("mariadbd  Ver 10.1.4-MariaDB for debian-linux-gnu on x86_64")
    assert set(missing) == {"encrypt_tmp_files", "encrypt_binlog"}
    assert missing["encrypt_binlog"].endswith("not available in MariaDB 10.1.4 (since 10.1.7)")
    names = {s.knob for s in knobs.sweeps(False, {}, missing)}
    assert names == {"encryption_algorithm", "encrypt_log", "tls"}
    lines = knobs.skipped({}, missing)
    assert len(lines) == 2 and all("not available in MariaDB 10.1.4" in x for x in lines)
    assert knobs.unavailable("mariadbd  Ver 10.11.19-MariaDB") == {} and knobs.unavailable("") == {}


def test_on_a_dsn_server_only_the_suites_and_one_line_for_the_rest():
    assert [s.knob for s in knobs.sweeps(True, {"dsn": "mysql://x@h/"})] == ["tls"]
    [line] = knobs.skipped({"dsn": "mysql://x@h/"})
    assert "startup options" in line and "restart" in line
    engine = ENGINES.get("mariadb")
    filters = parse_filters(["encrypt_log=off"], engine.variant_keys)
    with pytest.raises(UsageError, match="innodb_encrypt_log is a startup option"):
        engine.plan_keys(engine.variant_keys, filters, ["oltp"], {"dsn": "mysql://x@h/"})
    keys = engine.plan_keys(engine.variant_keys, {}, ["oltp"], {"dsn": "mysql://x@h/"})
    assert {k.name: k.default for k in keys}["encrypt_log"] == ()  # nothing varies it on a --dsn server


def test_sweeps_name_real_keys_and_values():
    engine = ENGINES.get("mariadb")
    keys = engine.variant_keys
    for quick in (True, False):
        for sweep in knobs.sweeps(quick, {}):
            filters = parse_filters(list(sweep.variants), keys)
            assert sweep.knob in filters and len(filters[sweep.knob]) >= 2, sweep
            assert any(k.key == sweep.knob for k in engine.knobs)
            for wl in sweep.workloads:
                variants = matrix(keys, filters, wl)
                assert {v[sweep.knob] for v in variants if sweep.knob in v} == set(filters[sweep.knob]), (sweep, wl)
    full = {s.name for s in knobs.sweeps(False, {})}
    assert {"encrypt-binlog", "encryption-algorithm-oltp"} <= full and len(full) == 6


def test_knob_keys_take_part_only_when_named():
    keys = ENGINES.get("mariadb").variant_keys
    for wl in ("scan-eq", "oltp", "sort", "dml"):
        assert all(not set(v) & set(knobs.BY_KEY) for v in matrix(keys, {}, wl)), wl


def test_what_a_tls_value_gives_up_and_whether_it_weakens():
    loss, weaker = knobs._SuiteLoss(), knobs._Weaker()
    assert "off" in weaker and "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384" in weaker
    assert "TLSv1.3:TLS_AES_128_GCM_SHA256" not in weaker and "on" not in weaker
    assert loss.get("on", "") == "" and loss.get("TLSv1.3:TLS_AES_256_GCM_SHA384", "") == ""
    assert "forward secrecy" in loss.get("TLSv1.2:AES256-GCM-SHA384", "")
    assert "forward secrecy" not in loss.get("TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384", "")
    assert "CBC" in loss.get("TLSv1.2:ECDHE-RSA-AES256-SHA384", "")
    assert "FIPS" in loss.get("TLSv1.3:TLS_CHACHA20_POLY1305_SHA256", "")
    assert "128-bit" in loss.get("TLSv1.3:TLS_AES_128_GCM_SHA256", "")
    assert "plaintext" in loss.get("off", "")


def test_filesystems_and_knobs_are_not_one_run():
    with pytest.raises(BadValueError, match="each needs servers of its own"):
        ENGINES.get("mariadb").check_variants([{"encryption": "fscrypt"}, {"encryption": "on", "encrypt_log": "off"}])
    ENGINES.get("mariadb").check_variants([{"encryption": "on", "encrypt_log": "off"}])


def test_each_named_cipher_has_its_own_raw_reference_key():
    engine = ENGINES.get("mariadb")
    assert engine.raw_cipher_key({"encryption": "on"}, 16384) == "16384"
    assert engine.raw_cipher_key({"encryption": "on", "encryption_algorithm": "aes_cbc"}, 16384) == "16384/aes_cbc"


def test_explanations_read_the_measurements():
    doc = {"environment": {"cpu": {"flags": {"sha_ni": True, "aes": True}}},
           "calibration": {"raw_cipher": {"16384": {"mb_per_s_per_core": 8000.0,
                                                    "cipher": "AES-256-CTR per 16384-byte page (...)"}}},
           "runs": [{"variant_label": "tls=on", "workload": "connect",
                     "session": {"tls": {"version": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384"}}},
                    *[{"variant_label": "enc", "workload": "oltp",
                       "operations": [{"metrics": {"redo_bytes_written": 2048.0 * n}, "extra": {"transactions": n}}]}
                      for n in (100, 300)],
                    {"variant_label": "enc", "workload": "oltp", "warmup": True,
                     "operations": [{"metrics": {"redo_bytes_written": 1e9}, "extra": {"transactions": 1}}]}]}
    ctx = {"docs": {"f": doc}}
    tls = {"key": "tls", "value": "TLSv1.3:TLS_CHACHA20_POLY1305_SHA256", "baseline": "tls=on", "file": "f",
           "metric": "cpu_us_per_connection", "baseline_mean": 1500.0}
    text = knobs.explain_tls(tls, ctx)
    assert "negotiates TLSv1.3 TLS_AES_256_GCM_SHA384" in text and "1.50 ms of CPU" in text
    assert "hashes with SHA-256, the default's with SHA-384 (SHA-NI" in text and "ChaCha20 in vector code" in text
    log = {"key": "encrypt_log", "workload": "oltp", "baseline": "enc", "file": "f", "baseline_mean": 1000.0}
    text = knobs.explain_written(log, ctx)  # the warmup run left out: 2 KB per transaction
    assert text.startswith("each transaction here writes 2.0 KB of redo log: what innodb_encrypt_log encrypts")
    assert "about 0.3 µs at this CPU's raw AES-256-CTR speed, against 1,000 µs" in text
