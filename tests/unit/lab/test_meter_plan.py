"""Issue 23: `--meter instructions` in the plan (lab/meter.py), the instructions probe and the worker's use of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from encbench.engines import ENGINES
from encbench.errors import BadValueError, EngineUnavailableError, UsageError
from encbench.host import valgrind
from encbench.lab import meter, runner, worker
from encbench.probes import DEFAULT_PROBES, PROBES, Target
from encbench.probes.instructions import InstructionMeter, InstructionsProbe, Reading
from encbench.host import callgrind
from encbench.workloads import WORKLOADS
from encbench.workloads.base import Operation


def _config(tmp_path: Path, **kw) -> runner.RunConfig:
    base = dict(engine="sqlite", workloads=["scan-like"], variant_filters=[], runs=2, warmups=0, size_bytes=1 << 20,
                seed=1, output=tmp_path / "r.json", data_dir=tmp_path, probes=list(DEFAULT_PROBES),
                meter=meter.INSTRUCTIONS)
    base.update(kw)
    return runner.RunConfig(**base)


def test_verdicts_under_the_meter_rest_on_counts():
    assert meter.verdict_metrics(WORKLOADS.get("scan-like")) == ("instructions",)
    assert meter.verdict_metrics(WORKLOADS.get("storm")) == ("instructions",)
    # a fixed-duration workload: per unit of what it got done, as its CPU per query is
    assert meter.verdict_metrics(WORKLOADS.get("roundtrip")) == ("instructions_per_query",)


def test_the_plan_records_the_meter_and_its_settings(tmp_path):
    cfg = _config(tmp_path, workloads=["scan-like", "dml"], quick=True)
    p = runner.plan(cfg)
    assert all(v["repeat"] == 1 for v in p.params.values())  # a count needs no repetition
    doc = runner.new_document(cfg, p, {"engine_versions": {}})
    assert doc["config"]["meter"] == "instructions" and doc["config"]["cache_sim"] is False
    assert doc["workloads"]["scan-like"]["verdict_metrics"] == ["instructions"]
    given = runner.plan(_config(tmp_path, params=["repeat=3"]))
    assert given.params["scan-like"]["repeat"] == 3  # unless --param names it
    timed = runner.new_document(_config(tmp_path, meter=meter.TIME), runner.plan(_config(tmp_path, meter=meter.TIME)),
                                {"engine_versions": {}})
    assert "meter" not in timed["config"]  # a time run's file is as before


def test_the_meter_quick_settings_keep_server_runs_short():
    resolved = {"storm": {"messages": 20000, "native_client": 1}, "connect": {"connections": 50}}
    assert meter.params(meter.INSTRUCTIONS, resolved, [], quick=True) == {
        "storm": {"messages": 5000, "native_client": 1}, "connect": {"connections": 10}}
    assert meter.params(meter.INSTRUCTIONS, resolved, ["messages=7"], quick=True)["storm"]["messages"] == 20000
    assert meter.params(meter.TIME, resolved, [], quick=True) == resolved


def test_a_dsn_server_is_never_run_under_valgrind(tmp_path):
    with pytest.raises(BadValueError) as e:
        runner.plan(_config(tmp_path, engine="postgres", workloads=["storm"], engine_options={"dsn": "host=x"}))
    assert e.value.exit_code == 4 and "--dsn" in str(e.value) and "--meter time" in e.value.hint


@pytest.mark.parametrize("engine,workload,named", [("postgres", "scan-like", "storm, roundtrip, bulk, connect"),
                                                   ("mariadb", "connect", "storm, roundtrip, bulk")])
def test_a_workload_that_cannot_be_metered_names_those_that_can(tmp_path, engine, workload, named):
    variants = ["encryption=off"] if workload == "scan-like" else []
    with pytest.raises(BadValueError) as e:
        runner.plan(_config(tmp_path, engine=engine, workloads=[workload], variant_filters=variants))
    assert f"cannot count {workload} on {engine}" in str(e.value) and e.value.hint == f"workloads it can: {named}"


def test_every_engine_says_what_it_can_meter():
    for name, e in ENGINES.items():
        if e.metered:
            assert e.metered in (meter.WORKER, meter.SERVER) and set(e.metered_workloads) <= set(e.workloads), name
    assert meter.metered_engines() == ["sqlite", "postgres", "mariadb"]


def test_valgrind_missing_is_exit_10_with_the_apt_get_line(tmp_path, monkeypatch):
    monkeypatch.setattr(valgrind.shutil, "which", lambda name: None)
    with pytest.raises(EngineUnavailableError) as e:
        runner.plan(_config(tmp_path))
    assert e.value.exit_code == 10 and e.value.hint == "install it with: apt-get install valgrind"


def test_precision_rounds_are_refused_under_the_meter(tmp_path):
    for kw in ({"precision": 3.0}, {"max_time_s": 60.0}):
        with pytest.raises(BadValueError) as e:
            runner.plan(_config(tmp_path, **kw))
        assert "--precision, --max-time and --budget" in str(e.value)


def test_the_instructions_probe_needs_the_meter_and_perf_is_refused(tmp_path):
    with pytest.raises(UsageError):
        runner.plan(_config(tmp_path, meter=meter.TIME, probes=["wall", "instructions"]))
    with pytest.raises(BadValueError) as e:
        runner.plan(_config(tmp_path, params=["profile=1"]))
    assert "perf" in str(e.value)
    assert "instructions" not in DEFAULT_PROBES and PROBES.get("instructions") is InstructionsProbe
    assert meter.default_probes(meter.INSTRUCTIONS, list(DEFAULT_PROBES)) == ["wall", "cpu", "ctxsw", "io", "pages",
                                                                               "net"]


def test_a_metered_run_without_its_count_fails():
    from encbench.errors import RunFailedError

    with pytest.raises(RunFailedError) as e:
        meter.check_counted({"operations": [{"operation": "scan", "metrics": {"wall_s": 1.0},
                                             "probe_errors": {"instructions": "RuntimeError: no dump"}}]}, "run 1")
    assert "scan has no instruction count: RuntimeError: no dump" in str(e.value)
    meter.check_counted({"operations": [{"operation": "scan", "metrics": {"instructions": 5.0}}]}, "run 1")


def _dump(totals: dict, functions: dict) -> callgrind.Dump:
    return callgrind.Dump("", 1, 1, "", list(totals), totals, functions)


def test_a_reading_sums_dumps_takes_off_the_framing_and_names_cache_misses():
    a = _dump({"Ir": 1000, "I1mr": 1, "D1mr": 2, "D1mw": 3, "ILmr": 4, "DLmr": 5, "DLmw": 6},
              {("/lib/libcrypto.so.3", "aes"): {"Ir": 900}, ("/bin/postgres", "x"): {"Ir": 100}})
    b = _dump({"Ir": 500, "I1mr": 0, "D1mr": 0, "D1mw": 0, "ILmr": 0, "DLmr": 0, "DLmw": 0},
              {("/lib/libcrypto.so.3", "aes"): {"Ir": 500}})
    r = Reading.of([a, b], "m", minus={"Ir": 100})
    assert r.metrics() == {"instructions": 1400.0, "l1i_misses": 1.0, "l1d_read_misses": 2.0, "l1d_write_misses": 3.0,
                           "ll_instr_misses": 4.0, "ll_read_misses": 5.0, "ll_write_misses": 6.0, "l1_misses": 6.0,
                           "ll_misses": 15.0}
    assert r.functions[0] == ["libcrypto.so.3", "aes", 1400]  # objects by their file name
    assert r.profile()["subtracted"] == {"Ir": 100} and r.profile()["method"] == "m"
    assert Reading.of([_dump({"Ir": 7}, {})], "m").metrics() == {"instructions": 7.0}


class _FakeMeter(InstructionMeter):
    def __init__(self):
        self.calls = []

    def start(self):
        self.calls.append("start")

    def stop(self):
        self.calls.append("stop")
        return Reading({"Ir": 42}, [["lib", "f", 42]], "fake")


class _Session:
    variant: dict = {}

    def __init__(self):
        self.targets = []

    def set_cache(self, state):
        return {}

    def target(self):
        t = Target(pids=[__import__("os").getpid()])
        self.targets.append(t)
        return t

    def check_operation(self, variant, metrics, cache):
        return None


def test_the_worker_puts_its_own_meter_on_the_target_and_keeps_the_functions():
    fake = _FakeMeter()
    out = worker._measure(Operation("op", run=lambda: {"rows": 3}), _Session(), {}, ["wall", "instructions"], fake)
    assert fake.calls == ["start", "stop"] and out["probe_errors"] == {}
    assert out["metrics"]["instructions"] == 42.0
    assert out["extra"]["rows"] == 3 and out["extra"]["instructions_profile"]["functions"] == [["lib", "f", 42]]


def test_without_a_meter_the_probe_records_why():
    out = worker._measure(Operation("op", run=lambda: None), _Session(), {}, ["instructions"])
    assert "no meter" in out["probe_errors"]["instructions"] and "instructions" not in out["metrics"]


def test_the_client_requests_do_nothing_natively():
    if not valgrind.supported_machine():
        pytest.skip("x86-64 only")
    assert valgrind.running_on_valgrind() is False
    assert valgrind.request(valgrind.TOGGLE_COLLECT, default=7) == 7
    features = valgrind.cpu_features()
    assert set(features) <= {f for f, *_ in valgrind.FEATURES} and "sse4_2" in features


def test_the_runner_reads_the_dumps_a_worker_left(tmp_path):
    """A worker under valgrind leaves its dumps for the runner (parsing them there would run simulated)."""
    from encbench.probes.instructions import PENDING, PROFILE_KEY, resolve

    text = ("events: Ir\nob=(1) /lib/x/libcrypto.so.3\nfl=(1) ???\nfn=(1) sha512_block_data_order_avx2\n0 900\n"
            "fn=(2) aesni_cbc_encrypt\n0 100\ntotals: 1000\n")
    op_dump, open_dump = tmp_path / "op.callgrind", tmp_path / "open.callgrind"
    op_dump.write_text(text)
    open_dump.write_text(text.replace("900", "1900").replace("totals: 1000", "totals: 2000"))
    record = {"open": {"wall_s": 1.0}, "open_profile": {"method": "m", PENDING: str(open_dump)},
              "operations": [{"operation": "scan", "metrics": {"wall_s": 2.0},
                              "extra": {"rows": 3, PROFILE_KEY: {"method": "m", PENDING: str(op_dump)}}}]}
    out = resolve(record)
    op = out["operations"][0]
    assert op["metrics"] == {"wall_s": 2.0, "instructions": 1000.0}
    assert op["extra"][PROFILE_KEY]["functions"][0] == ["libcrypto.so.3", "sha512_block_data_order_avx2", 900]
    assert out["open"] == {"wall_s": 1.0, "instructions": 2000.0} and PENDING not in out["open_profile"]
    assert not op_dump.exists() and not open_dump.exists()
    meter.check_counted(out, "run 1")
