"""ENCBENCH_PORTS: private servers take their ports in a range of their own (test workers side by side)."""

from __future__ import annotations

import pytest

from encbench.engines.local import ports
from encbench.errors import BadValueError


def test_without_the_variable_the_whole_range_below_the_ephemeral_ports(monkeypatch):
    monkeypatch.delenv(ports.ENV, raising=False)
    assert ports.port_range() == (ports.LOW, ports.HIGH)


def test_every_port_chosen_lies_in_the_range_given(monkeypatch):
    monkeypatch.setenv(ports.ENV, "21000-21009")
    assert ports.port_range() == (21000, 21009)
    assert {ports.free_port() for _ in range(20)} <= set(range(21000, 21010))


@pytest.mark.parametrize("text", ["20000", "x-20010", "20010-20000", "80-90", "20000-70000", "-"])
def test_a_range_that_is_not_one_is_a_bad_value_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv(ports.ENV, text)
    with pytest.raises(BadValueError) as e:
        ports.free_port()
    assert e.value.exit_code == 4 and "ENCBENCH_PORTS" in e.value.one_line()


def test_a_range_inside_the_ephemeral_ports_is_refused(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (32768, 60999))
    monkeypatch.setenv(ports.ENV, "40000-40100")
    with pytest.raises(BadValueError, match="ephemeral"):
        ports.port_range()
