"""encbench.util.registry: names to parts, with helpful errors."""

from __future__ import annotations

import pytest

from encbench.engines import ENGINES
from encbench.errors import UnknownNameError
from encbench.probes import PROBES
from encbench.util.registry import Registry
from encbench.workloads import WORKLOADS


def test_register_get_names_contains():
    r: Registry[int] = Registry("widget")
    assert r.register("a", 1) == 1
    r.register("b", 2)
    assert r.get("a") == 1 and r.get("b") == 2
    assert r.names() == ["a", "b"]  # registration order
    assert list(r.items()) == [("a", 1), ("b", 2)]
    assert "a" in r and "c" not in r


def test_unknown_name_lists_valid_names():
    r: Registry[int] = Registry("widget")
    r.register("alpha", 1)
    r.register("beta", 2)
    with pytest.raises(UnknownNameError) as ei:
        r.get("gamma")
    e = ei.value
    assert str(e) == "unknown widget 'gamma'"
    assert e.hint == "valid: alpha, beta"
    assert e.exit_code == 3
    assert e.one_line() == "unknown widget 'gamma' (valid: alpha, beta)"


def test_unknown_name_in_empty_registry():
    with pytest.raises(UnknownNameError):
        Registry("widget").get("x")


def test_double_registration_raises_and_keeps_first():
    r: Registry[int] = Registry("widget")
    r.register("a", 1)
    with pytest.raises(ValueError, match="widget 'a' registered twice"):
        r.register("a", 2)
    assert r.get("a") == 1


@pytest.mark.parametrize("registry,kind,known", [
    (PROBES, "probe", "cpu"), (ENGINES, "engine", "sqlite"), (WORKLOADS, "workload", "scan-like"),
])
def test_real_registries(registry, kind, known):
    assert known in registry
    with pytest.raises(UnknownNameError) as ei:
        registry.get("does-not-exist")
    assert f"unknown {kind} 'does-not-exist'" in str(ei.value)
    for name in registry.names():
        assert name in ei.value.hint
