"""tls-scan --targets: the targets file, baseline names, the exit code of a fleet, the table, JSON Lines and
the Prometheus file (scans replaced by recorded results: the real ones are in tests/integration/test_fleet_scan.py)."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from encbench.errors import BadValueError, EngineUnavailableError, NoTLSError, UnknownNameError, UsageError
from encbench.report import prometheus
from encbench.tls import fleet
from encbench.tls.scan import Endpoint


def test_a_targets_file_with_comments_dsns_and_host_port_engine():
    text = ("# the fleet\n\npostgresql://u:secret@db1:5433/app\n  db2:3306   # MariaDB by its port\n"
            "[::1]:6000/postgres\nDB3:7000/mysql\n")
    targets = fleet.parse_targets(text, "t.txt")
    assert [(t.line, t.endpoint) for t in targets] == [
        (3, Endpoint("postgres", "db1", 5433)), (4, Endpoint("mysql", "db2", 3306)),
        (5, Endpoint("postgres", "::1", 6000)), (6, Endpoint("mysql", "DB3", 7000))]
    assert all("secret" not in t.label for t in targets)


@pytest.mark.parametrize("text,error,words", [
    ("db1:5432\nnot a target\n", BadValueError, ["t.txt line 2", "one target per line"]),
    ("db1:5432\ndb2\n", BadValueError, ["t.txt line 2", "neither a DSN nor host:port"]),
    ("db1:99999/postgres\n", BadValueError, ["t.txt line 1", "out of range"]),
    ("db1:6000\n", BadValueError, ["t.txt line 1", "no engine's default", "/postgres"]),
    ("db1:6000/oracle\n", UnknownNameError, ["t.txt line 1", "unknown engine 'oracle'"]),
    ("https://u:pw@db1\n", BadValueError, ["t.txt line 1"]),
    ("db1:5432\n# again\npostgresql://x:y@DB1:5432/other\n", BadValueError, ["t.txt line 3", "repeats line 1"]),
    ("# nothing\n\n   \n", UsageError, ["names no target"]),
])
def test_bad_targets_files_name_the_line(text, error, words):
    with pytest.raises(error) as e:
        fleet.parse_targets(text, "t.txt")
    for w in words:
        assert w in e.value.one_line()
    assert "pw" not in e.value.one_line()  # a password on a bad line is not repeated


def test_a_missing_or_binary_targets_file(tmp_path):
    from encbench.errors import ResultFileError

    with pytest.raises(ResultFileError):
        fleet.read_targets(tmp_path / "none.txt")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00db1:5432")
    with pytest.raises(BadValueError, match="not UTF-8"):
        fleet.read_targets(tmp_path / "bin")


def test_baseline_names_are_plain_file_names_and_distinct():
    names = {fleet.baseline_name(Endpoint(k, h, p)) for k, h, p in (
        ("postgres", "db1.example.com", 5432), ("postgres", "DB1.example.com", 5433), ("mysql", "db1.example.com", 5432),
        ("postgres", "::1", 5432), ("postgres", "..", 5432), ("postgres", "a_b", 1), ("postgres", "a-b", 1))}
    assert len(names) == 7
    assert fleet.baseline_name(Endpoint("postgres", "db1.example.com", 5432)) == "postgres_db1.example.com_5432.json"
    for n in names:
        assert "/" not in n and not n.startswith(".") and n.endswith(".json")


def _scan(suites=("ECDHE-RSA-AES256-GCM-SHA384",), protocols=("TLSv1.2",)):
    from encbench.tls.scan import grade

    return {"kind": "encbench-tls-scan", "version": 1, "target": "x", "engine": "postgres",
            "protocols": list(protocols), "suites": {"TLSv1.2": [dict(suite=s, **grade(s, "TLSv1.2")) for s in suites]},
            "order": {"TLSv1.2": "server"}, "groups": ["X25519"], "groups_protocol": "TLSv1.2",
            "certificate": {"sha256_fingerprint": "aa", "days_left": 30}, "direct_tls": None}


def _fake_scanner(behaviour):
    def scan(ep):
        what = behaviour[ep.port]
        if isinstance(what, Exception):
            raise what
        return what
    return scan


def test_one_failing_target_does_not_stop_the_others_and_drift_is_per_target(tmp_path):
    targets = fleet.parse_targets("h:1/postgres\nh:2/postgres\nh:3/postgres\n", "t")
    first = {1: _scan(), 2: EngineUnavailableError("cannot reach h:2"), 3: _scan()}
    out = fleet.scan_all(targets, jobs=3, baseline_dir=tmp_path, scan=_fake_scanner(first))
    assert [o.status for o in out] == ["new-baseline", "error", "new-baseline"]
    assert [o.exit_code for o in out] == [0, 10, 0]
    assert fleet.exit_code(out) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["postgres_h_1.json", "postgres_h_3.json"]
    second = {1: _scan(), 2: NoTLSError("TLS off"), 3: _scan(suites=("ECDHE-RSA-AES256-SHA",))}
    out = fleet.scan_all(targets, jobs=2, baseline_dir=tmp_path, scan=_fake_scanner(second))
    assert [o.status for o in out] == ["ok", "error", "drift"]
    assert [o.exit_code for o in out] == [0, 15, 14]
    assert fleet.exit_code(out) == 14  # drift first
    assert out[2].weakest_grade == "C" and out[0].weakest_grade == "A"
    assert "TLSv1.2: suite added: ECDHE-RSA-AES256-SHA" in out[2].drift
    lines = fleet.table_lines(out)
    assert lines[0].split() == ["target", "protocols", "suites", "weakest", "drift"]
    assert "DRIFT: 2 change(s)" in lines[3] and "ERROR (exit 15)" in lines[2]
    assert lines[-1] == "3 target(s): 2 scanned, 1 failed, 1 drifted"
    row = json.loads(json.dumps(out[2].to_dict()))
    assert row["exit_code"] == 14 and row["suites_accepted"] == 1 and row["weakest_grade"] == "C"
    # the baseline was not replaced by the drifted scan (no --update-baselines)
    assert fleet.scan_all(targets[2:], baseline_dir=tmp_path, scan=_fake_scanner(second))[0].status == "drift"
    fleet.scan_all(targets[2:], baseline_dir=tmp_path, update=True, scan=_fake_scanner(second))
    assert fleet.scan_all(targets[2:], baseline_dir=tmp_path, scan=_fake_scanner(second))[0].status == "ok"


def test_a_line_that_names_no_target_is_that_lines_failure_and_the_rest_are_scanned(tmp_path):
    text = ("h:1/postgres\npostgresql://u:topsecret@[::1\nmysql://db:0\nnot-a-target\nh:2/oracle\n"
            "postgresql://h:1\nh:2/postgres\n")
    targets = fleet.parse_targets(text, "t.txt", keep_bad=True)
    out = fleet.scan_all(targets, baseline_dir=tmp_path, scan=_fake_scanner({1: _scan(), 2: _scan()}))
    assert [(o.target.line, o.status, o.exit_code) for o in out] == [
        (1, "new-baseline", 0), (2, "error", 4), (3, "error", 4), (4, "error", 4), (5, "error", 3), (6, "error", 4),
        (7, "new-baseline", 0)]
    errors = [o.error for o in out]
    assert "t.txt line 2:" in errors[1] and "unclosed '['" in errors[1]
    assert "port 0 is out of range" in errors[2] and "repeats line 1" in errors[5]
    assert fleet.exit_code(out) == 10  # the failures differ (4 and 3): 10, as documented
    text = "\n".join(fleet.table_lines(out)) + "".join(json.dumps(o.to_dict()) for o in out)
    assert "topsecret" not in text and "7 target(s): 2 scanned, 5 failed" in text
    with pytest.raises(BadValueError, match="t.txt line 2"):  # leak-check --posture --targets: the file refused
        fleet.parse_targets("h:1/postgres\npostgresql://[::1\n", "t.txt")


@pytest.mark.parametrize("codes,expected", [([0, 0], 0), ([0, 14, 10], 14), ([15, 15, 0], 15), ([15, 16], 10),
                                            ([10, 16, 14], 14)])
def test_exit_code_precedence(codes, expected):
    outs = [fleet.Outcome(fleet.Target(i, Endpoint("postgres", "h", i)), exit_code=c) for i, c in enumerate(codes, 1)]
    assert fleet.exit_code(outs) == expected


def test_the_prometheus_file_parses_back(tmp_path):
    targets = fleet.parse_targets("h:1/postgres\nh:2/postgres\n", "t")
    out = fleet.scan_all(targets, scan=_fake_scanner({1: _scan(suites=("ECDHE-RSA-AES256-GCM-SHA384", "AES128-SHA")),
                                                      2: EngineUnavailableError("down")}))
    path = tmp_path / "encbench.prom"
    prometheus.write(path, prometheus.tls_registry(out))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(path.read_text()) for s in fam.samples}
    t1, t2 = (("target", "postgres://h:1"),), (("target", "postgres://h:2"),)
    assert samples[("encbench_tls_scan_success", t1)] == 1 and samples[("encbench_tls_scan_success", t2)] == 0
    assert samples[("encbench_tls_scan_exit_code", t2)] == 10
    assert samples[("encbench_tls_suites_accepted", t1)] == 2
    assert samples[("encbench_tls_weakest_grade", t1)] == prometheus.GRADE_CODES["C"]
    assert samples[("encbench_tls_protocol_accepted", (("protocol", "TLSv1.2"),) + t1)] == 1
    assert samples[("encbench_tls_protocol_accepted", (("protocol", "TLSv1.3"),) + t1)] == 0
    assert ("encbench_tls_drift", t1) not in samples  # not compared: no baseline directory
    assert ("encbench_tls_suites_accepted", t2) not in samples
    assert [p.name for p in tmp_path.iterdir()] == ["encbench.prom"]  # no temporary file left


def test_run_and_leak_metrics_parse_back(tmp_path):
    from encbench.vocab.leakcheck import Finding, LeakReport

    comps = [{"workload": "scan-eq", "operation": "select", "metric": "elapsed_s", "contender": "sqlcipher",
              "baseline": "plain", "ratio": 1.25, "ci": [1.1, 1.4]},
             {"workload": "scan-eq", "operation": "select", "metric": "cpu_s", "contender": "sqlcipher",
              "baseline": "plain", "ratio": float("nan"), "ci": None},
             {"workload": "scan-eq", "operation": "select", "metric": "elapsed_s", "contender": "placebo",
              "baseline": "plain", "ratio": 1.0, "ci": [0.9, 1.1], "placebo": True}]
    path = tmp_path / "run.prom"
    prometheus.write(path, prometheus.run_registry("sqlite", comps))
    fams = {f.name: f.samples for f in text_string_to_metric_families(path.read_text())}
    assert [(s.labels["variant"], s.value) for s in fams["encbench_overhead_ratio"]] == [("sqlcipher", 1.25)]
    assert fams["encbench_overhead_ratio_ci_low"][0].value == 1.1
    report = LeakReport("mariadb", "binlog off", 32, scanned_files=12,
                        findings=[Finding("/d/bin.000001", "binary log", 3, "encrypt_binlog=ON"),
                                  Finding("/d/bin.000002", "binary log", 1, "encrypt_binlog=ON")])
    prometheus.write(path, prometheus.leak_registry(report, "127.0.0.1:3306"))
    fams = {f.name: f.samples for f in text_string_to_metric_families(path.read_text())}
    assert fams["encbench_leak_findings"][0].value == 2
    assert fams["encbench_leak_occurrences"][0].labels["role"] == "binary log"
    assert fams["encbench_leak_occurrences"][0].value == 4


def test_the_cli_checks_its_fleet_options_before_any_scan(tmp_path, capsys):
    from encbench import cli

    t = tmp_path / "t.txt"
    t.write_text("db1.invalid:5432\n")
    cases = [(["--targets", str(t), "--jobs", "0"], 4), (["--targets", str(t), "--timeout", "nan"], 4),
             (["--targets", str(t), "--prometheus", str(tmp_path / "x.txt")], 4),
             (["--targets", str(t), "--baseline-dir", str(t)], 5),
             (["--targets", str(t), "--update-baselines"], 2), (["--targets", str(t), "--json"], 2),
             (["--targets", str(t), "postgresql://db1"], 2), (["postgresql://db1", "--jobs", "4"], 2),
             (["postgresql://db1", "--format", "jsonl"], 2)]
    for args, code in cases:
        assert cli.main(["tls-scan", *args]) == code, args
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, (args, err)


def test_the_leak_target_label_never_holds_credentials():
    assert prometheus.leak_target(None) == "private"
    assert prometheus.leak_target("mysql://root:s3cret@127.0.0.1:3307/x") == "127.0.0.1:3307"
    assert prometheus.leak_target("postgresql://u:pw@db1/app") == "db1:default"
    assert prometheus.leak_target("host=/tmp port=5433 user=u password='s3 cret'") == "/tmp:5433"


def test_ctrl_c_ends_the_running_scans_at_their_next_wait():
    import os
    import signal
    import threading
    import time

    def endless(ep):  # a scan that waits on the network for ever, within its deadline
        while True:
            ep.wait_s()
            time.sleep(0.02)

    targets = fleet.parse_targets("h:1/postgres\nh:2/postgres\nh:3/postgres\n", "t")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # cli.main (an earlier test) sets its own
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            fleet.scan_all(targets, jobs=2, timeout_s=20, scan=endless)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 5  # not the 60 s of the scans' deadline
    assert not [t for t in threading.enumerate() if t.name.startswith("tls-scan")]
