"""Declared session capabilities (issue 13 item 3): each workload family's Protocol, engines'
session classes checked against them structurally, `plan()` refusing what a session cannot serve."""

from __future__ import annotations

import ast
import inspect
import os
from pathlib import Path
from typing import Protocol

import pytest

from encbench.engines import ENGINES
from encbench.engines.base import Engine, Session
from encbench.errors import UnknownNameError
from encbench.lab import runner, worker
from encbench.probes import Target
from encbench.workloads import WORKLOADS, capabilities
from encbench.workloads.base import Operation

WORKLOADS_DIR = Path(capabilities.__file__).parent
PROTOCOLS = [v for v in vars(capabilities).values()
             if isinstance(v, type) and getattr(v, "_is_protocol", False) and v is not Protocol]


# -- what the engines declare is what their sessions serve ---------------------------------

@pytest.mark.parametrize("name", ENGINES.names())
def test_every_workload_an_engine_lists_its_session_serves(name):
    engine = ENGINES.get(name)
    assert engine.session_class is not Session, f"{name}: Engine.session_class not declared"
    lacking = {wl: capabilities.unserved(engine, WORKLOADS.get(wl)) for wl in engine.workloads}
    assert not {wl: gaps for wl, gaps in lacking.items() if gaps}, f"{name} lists workloads its session cannot serve"
    assert capabilities.supported(engine, WORKLOADS) == tuple(engine.workloads)
    assert set(engine.default_workloads or ()) <= set(engine.workloads)
    assert set(engine.selftest_workloads) <= set(engine.workloads)


def test_session_capabilities_by_family():
    engines = {n: set(capabilities.capabilities(ENGINES.get(n).session_class)) for n in ENGINES.names()}
    assert engines["sqlite"] == {"at rest", "in column", "oltp"}
    assert engines["postgres"] == {"at rest", "in transit", "in query", "in column", "oltp"}
    assert engines["mariadb"] == {"at rest", "in transit", "in query", "in column", "oltp", "sort"}


@pytest.mark.parametrize("name", WORKLOADS.names())
def test_every_workload_names_a_declared_protocol(name):
    assert WORKLOADS.get(name).needs in PROTOCOLS


# -- every call a workload makes on a session is declared, once ----------------------------

def _session_attributes(path: Path) -> set[str]:
    """Every `session.NAME` in a module (the workloads' parameter is called `session`)."""
    return {node.attr for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "session"}


def _session_base_members() -> set[str]:
    return {n for c in Session.__mro__ for n in list(vars(c)) + list(getattr(c, "__annotations__", {}))
            if not n.startswith("_")}


@pytest.mark.parametrize("name", WORKLOADS.names())
def test_what_a_workload_calls_on_its_session_is_declared(name):
    wl = WORKLOADS.get(name)
    module = Path(inspect.getfile(type(wl)))
    used = _session_attributes(module)
    if "repeat." in module.read_text():
        used |= _session_attributes(WORKLOADS_DIR / "repeat.py")
    undeclared = used - set(capabilities.members(wl.needs)) - _session_base_members()
    assert not undeclared, f"{name} calls {sorted(undeclared)} on its session: declare them in {wl.needs.__name__}"


def test_each_member_is_declared_in_exactly_one_protocol():
    owners: dict[str, list[str]] = {}
    for proto in PROTOCOLS:
        for n, v in vars(proto).items():
            if not n.startswith("_") and callable(v):
                owners.setdefault(n, []).append(proto.__name__)
    assert {n: o for n, o in owners.items() if len(o) > 1} == {}
    assert not set(owners) & _session_base_members(), "a Protocol re-declares what every Session has"
    family_members = set().union(*(capabilities.members(p) for p in capabilities.FAMILIES.values()))
    assert family_members == set(owners), "a Protocol member outside every family"


def test_the_stale_backup_declaration_is_gone_and_hooks_have_defaults():
    assert not hasattr(Session, "backup")
    assert Session.check_operation(Session(), {}, {}, {}) is None
    assert Session.info == {}


# -- the derivation: a missing method, a wrong call, a renamed parameter --------------------

class _Churn:
    def use_target(self, target):
        pass

    def churn_target(self, marker):  # named otherwise than the Protocol: called by position
        return Target(pids=[])


class _FullConnect(_Churn, Session):
    def connect_cycles(self, n, marker):
        return []

    @staticmethod
    def settle(ids, timeout=5.0):
        pass


class _NoSettle(_Churn, Session):
    def connect_cycles(self, n, marker):
        return []


class _WrongCall(_Churn, Session):
    def connect_cycles(self, n):  # the workload passes two arguments
        return []

    def settle(self, ids):
        pass


def test_a_session_with_every_method_serves_the_workload():
    assert capabilities.gaps(_FullConnect, capabilities.ConnectSession) == []


def test_a_missing_method_is_named():
    assert capabilities.gaps(_NoSettle, capabilities.ConnectSession) == ["settle()"]


def test_a_method_that_cannot_be_called_as_declared_is_named():
    gaps = capabilities.gaps(_WrongCall, capabilities.ConnectSession)
    assert len(gaps) == 1 and gaps[0].startswith("connect_cycles() callable as connect_cycles(n")


def test_keyword_arguments_are_checked_by_name():
    class Sessions(Session):
        def use_target(self, target):
            pass

        def hash_sql(self, function, with_function):
            return ""

        def open_sessions(self, k, *, concurrent):  # the workload passes parallel=
            return []

        def sessions_target(self, conns):
            return Target(pids=[])

        def run_sessions(self, conns, sql):
            return [], 0.0

        close_sessions = staticmethod(lambda conns: None)

    assert capabilities.gaps(Sessions, capabilities.InQuerySession) == \
        ["open_sessions() callable as open_sessions(k, /, *, parallel)"]


def test_a_data_member_is_found_on_the_class_or_its_annotations():
    class Needs(Protocol):
        page_size: int

    class Has(Session):
        page_size: int

    assert capabilities.gaps(Has, Needs) == [] and capabilities.gaps(Session, Needs) == ["attribute page_size"]


# -- plan() and the error a user sees --------------------------------------------------------

def _config(engine: str, workload: str) -> runner.RunConfig:
    return runner.RunConfig(engine=engine, workloads=[workload], variant_filters=[], runs=2, warmups=0,
                            size_bytes=1 << 20, seed=1, output=Path("out.json"), data_dir=Path("data"),
                            probes=["wall"])


def test_plan_refuses_a_workload_the_session_cannot_serve_naming_the_method(monkeypatch):
    engine = ENGINES.get("sqlite")
    missing = type("NoBackup", (Session,), {n: getattr(engine.session_class, n)
                                              for n in ("query", "begin", "execute", "commit", "rebuild_operations",
                                                        "prepare_backup", "check_backup")})
    monkeypatch.setattr(engine, "session_class", missing)
    assert runner.plan(_config("sqlite", "scan-eq")).workloads[0].name == "scan-eq"  # still served
    with pytest.raises(UnknownNameError) as e:
        runner.plan(_config("sqlite", "backup"))
    msg = e.value.one_line()
    assert "backup" in msg and "run_backup()" in msg and "NoBackup" in msg and "\n" not in msg
    assert e.value.exit_code == 3
    assert "backup" not in capabilities.supported(engine, WORKLOADS)


def test_plan_refuses_a_workload_the_engine_does_not_list():
    with pytest.raises(UnknownNameError) as e:
        runner.plan(_config("sqlite", "storm"))
    assert e.value.exit_code == 3 and "has no workload 'storm'" in str(e.value)
    assert e.value.hint == "valid: scan-like, scan-eq, dml, rebuild, backup, column, oltp"


def test_require_on_a_fake_engine():
    class Fake(Engine):
        name = "fake"
        workloads = ("connect",)
        session_class = _NoSettle

    with pytest.raises(UnknownNameError, match=r"cannot run workload 'connect'.*lacks settle\(\)"):
        capabilities.require(Fake(), WORKLOADS.get("connect"), WORKLOADS)
    Fake.session_class = _FullConnect
    capabilities.require(Fake(), WORKLOADS.get("connect"), WORKLOADS)


# -- the worker calls the declared hook, no getattr -------------------------------------------

def test_worker_calls_check_operation_of_the_session():
    class Checked(Session):
        def set_cache(self, state):
            return {"cache": state}

        def target(self):
            return Target(pids=[os.getpid()])

        def check_operation(self, variant, metrics, cache):
            return {"checked": cache["cache"]}

    class Plain(Checked):
        check_operation = Session.check_operation

    op = Operation("noop", run=lambda: {"n": 1})
    assert worker._measure(op, Checked(), {"cache": "warm"}, ["wall"])["extra"] == {"n": 1, "checked": "warm"}
    assert worker._measure(op, Plain(), {"cache": "warm"}, ["wall"])["extra"] == {"n": 1}
    assert "getattr" not in Path(worker.__file__).read_text()


# -- encbench list says which engine serves which workload, from the same derivation ----------

def test_list_shows_what_each_session_serves(monkeypatch, capsys):
    import argparse
    import json

    from encbench.cli.list import cmd_list

    assert cmd_list(argparse.Namespace(json=True)) == 0
    supported = json.loads(capsys.readouterr().out)["supported"]
    assert supported == {n: list(ENGINES.get(n).workloads) for n in ENGINES.names()}
    engine = ENGINES.get("postgres")
    no_stream = type("NoStream", (engine.session_class,), {"stream_out": None})  # not callable: not served
    monkeypatch.setattr(engine, "session_class", no_stream)
    assert cmd_list(argparse.Namespace(json=False)) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("postgres ")
                and "storm" in x)
    assert line.split()[1:] == ["storm,", "roundtrip,", "connect,", "scan-like,", "scan-eq,", "dml,", "rebuild,",
                                "backup,", "hash,", "column,", "oltp"]
