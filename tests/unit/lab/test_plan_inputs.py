"""runner.plan reads every input before anything runs (issue 28): a --dsn the engine cannot read is one line, exit 4,
from the plan (advise checks every sweep's plan before its first sweep), never a ValueError later."""

from __future__ import annotations

import pytest

from encbench.errors import BadValueError
from encbench.lab import runner
from encbench.probes import DEFAULT_PROBES


def _config(tmp_path, **kw) -> runner.RunConfig:
    base = dict(engine="sqlite", workloads=["roundtrip"], variant_filters=["cache=warm"], runs=2, warmups=0,
                size_bytes=1 << 20, seed=1, output=tmp_path / "r.json", data_dir=tmp_path, probes=list(DEFAULT_PROBES))
    base.update(kw)
    return runner.RunConfig(**base)


@pytest.mark.parametrize("engine,dsn,words", [
    ("mariadb", "mysql://u:topsecret@[::1", "unclosed '['"),
    ("mariadb", "mysql://u:topsecret@db1:0/x", "port 0 is out of range"),
    ("postgres", "postgresql://u:topsecret@[::1", "not a valid connection string"),
    ("postgres", "postgresql://u:topsecret@db1:0/x", "port 0 is out of range"),
])
def test_a_dsn_the_engine_cannot_read_is_refused_by_the_plan(tmp_path, engine, dsn, words):
    with pytest.raises(BadValueError) as e:
        runner.plan(_config(tmp_path, engine=engine, engine_options={"dsn": dsn}))
    assert words in e.value.one_line() and "topsecret" not in e.value.one_line()


def test_a_plan_of_more_runs_than_a_result_file_holds_is_refused(tmp_path):
    from encbench.lab import resultschema

    cfg = _config(tmp_path, workloads=["scan-like"], variant_filters=[], runs=1)
    per_round = len(runner.plan(cfg).items)
    runs = resultschema.MAX_RUNS // per_round + 1
    with pytest.raises(BadValueError, match=f"a result file holds at most {resultschema.MAX_RUNS:,}"):
        runner.plan(_config(tmp_path, workloads=["scan-like"], variant_filters=[], runs=runs))
    assert len(runner.plan(_config(tmp_path, workloads=["scan-like"], variant_filters=[],
                                   runs=runs - 1)).items) <= resultschema.MAX_RUNS


@pytest.mark.parametrize("dsn,words", [
    ("mysql://u:topsecret@[::1", "--live 'mysql://u:<hidden>@[::1' has an unclosed '['"),
    ("postgresql://u:topsecret@[::1", "--live is not a valid connection string"),
    ("postgresql://u:topsecret@db1:0/x", "--live: port 0 is out of range"),
])
def test_estimate_live_reads_its_dsn_in_one_line_before_connecting(dsn, words):
    from encbench.analysis import estimate

    with pytest.raises(BadValueError) as e:
        estimate.live_rates(dsn, 0.1, sleep=lambda s: pytest.fail("sampled"))
    assert words in e.value.one_line() and "topsecret" not in e.value.one_line()
