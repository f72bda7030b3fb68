"""--param NAME=VALUE: every value checked against the range its declaring workloads give, used or not (issue 28)."""

from __future__ import annotations

import pytest

import encbench.engines  # noqa: F401 (the registries, in their import order)
from encbench.engines import ENGINES
from encbench.errors import BadValueError, UnknownNameError
from encbench.workloads import WORKLOADS
from encbench.workloads.base import resolve_params


def _sqlite(chosen: list[str], given: list[str]) -> dict:
    return resolve_params([WORKLOADS.get(n) for n in chosen], given, quick=False,
                          engine_workloads=[WORKLOADS.get(n) for n in ENGINES.get("sqlite").workloads])


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "1e9", "x"])
def test_a_meaningless_value_of_a_parameter_no_chosen_workload_uses_is_refused(value):
    for chosen in (["scan-like"], ["oltp"]):  # a default run, and the workload that uses it: the same refusal
        with pytest.raises(BadValueError, match="--param seconds="):
            _sqlite(chosen, [f"seconds={value}"])


def test_a_valid_value_of_an_unused_parameter_is_accepted_and_unused():
    assert _sqlite(["scan-like"], ["seconds=5"]) == {"scan-like": _sqlite(["scan-like"], [])["scan-like"]}
    assert _sqlite(["oltp"], ["seconds=5"])["oltp"]["seconds"] == 5
    with pytest.raises(UnknownNameError):
        _sqlite(["scan-like"], ["nonsense=1"])
