"""tests/xdist_workers.py: each pytest-xdist worker's own directories and port slice, and the check that no two
workers' private servers share a directory or a port."""

from __future__ import annotations

from pathlib import Path

import pytest

from encbench.engines.local import ports
from xdist_workers import Server, Watch, share, shared, worker_ports


@pytest.mark.parametrize("count", [1, 2, 3, 4, 8])
def test_the_port_slices_are_disjoint_and_below_the_ephemeral_range(count):
    slices = [worker_ports(i, count) for i in range(count)]
    taken = [p for lo, hi in slices for p in range(lo, hi + 1)]
    assert len(taken) == len(set(taken)) and min(taken) >= ports.LOW and max(taken) <= ports.HIGH
    assert all(hi - lo > 1000 for lo, hi in slices)


def test_two_workers_share_nothing_and_a_clash_is_named():
    base = Path("/tmp/xd-test")
    shares = {w: share(base, w, 2) for w in ("gw0", "gw1")}
    assert shared(shares) == []
    shares["gw1"] = dict(shares["gw1"], TMPDIR=base / "gw0" / "sub", ENCBENCH_PORTS=shares["gw0"]["ENCBENCH_PORTS"])
    clash = shared(shares)
    assert len(clash) == 2 and "ports" in clash[0] and "TMPDIR" in clash[1]


def _watch(count: int = 2) -> Watch:
    return Watch("/tmp/xd-test", count)


def test_servers_in_their_own_slices_and_directories_pass():
    w = _watch()
    lo0, lo1 = worker_ports(0, 2)[0], worker_ports(1, 2)[0]
    for s in (Server(10, "gw0", "/a/data", lo0), Server(11, "gw0", "/a/data", lo0), Server(12, "gw1", "/b", lo1),
              Server(13, "gw0", "/c", lo0)):  # a port used again by its own worker, one server seen twice
        w._check(s)
    assert w.take() == []


def test_a_port_outside_its_slice_or_a_directory_or_port_of_two_workers_fails():
    w = _watch()
    lo0, lo1 = worker_ports(0, 2)[0], worker_ports(1, 2)[0]
    w._check(Server(10, "gw0", "/a/data", lo1))
    assert "outside" in w.take()[0]
    w._check(Server(11, "gw0", "/d", lo0))
    w._check(Server(12, "gw1", "/d", lo1))
    w._check(Server(13, "gw1", "/e", lo0))
    problems = w.take()
    assert any("/d used by a server of gw0 and by gw1" in p for p in problems)
    assert any(f"{lo0} used by a server of gw0 and by gw1" in p for p in problems) and w.take() == []


def test_a_servers_port_is_the_one_it_listens_on_not_one_it_failed_to_bind():
    import os
    import socket

    import xdist_workers

    with socket.create_server(("127.0.0.1", 0)) as listening, socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))  # bound, not listening: as a server whose listen failed
        ports_here = xdist_workers._ports(os.getpid(), xdist_workers._listening())
        assert listening.getsockname()[1] in ports_here and bound.getsockname()[1] not in ports_here


def test_a_process_the_tests_spawn_sees_the_width_the_suite_was_started_with():
    """GNU readline (loaded in pytest) exports COLUMNS=80 LINES=24 at the C level: tests/conftest.py undoes it, or
    every child spawned without env= (xdist's workers too, then their encbench commands) made 80-column tables."""
    import os
    import subprocess

    child = subprocess.run(["sh", "-c", 'echo "${COLUMNS-unset} ${LINES-unset}"'], capture_output=True, text=True)
    assert child.stdout.split() == [os.environ.get("COLUMNS", "unset"), os.environ.get("LINES", "unset")]
