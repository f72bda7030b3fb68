"""One private-server contract (engines/local/private_server.PrivateServer, issue 29 item 5) that PostgreSQL and
MariaDB both implement: start, stop, alive, worker handle, log, owner record. No server is started: each server
here only has a directory, a log and a pid file naming a live process (this one) or none."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from encbench.engines.local import private_server
from encbench.engines.local.private_server import PrivateServer
from encbench.engines.mariadb import server as maria_server
from encbench.engines.postgres import server as pg_server

SRC = Path(private_server.__file__).resolve().parents[3]  # src/
SECRET = "s3cr3t-Pa55"


def _pg(root: Path, running: bool) -> pg_server.PgServer:
    (root / "data").mkdir(parents=True)
    if running:
        (root / "data" / "postmaster.pid").write_text(f"{os.getpid()}\n")
    return pg_server.PgServer(bindir=Path("/nonexistent"), root=root, port=5999, password=SECRET, user=None)


def _maria(root: Path, running: bool) -> maria_server.MariaServer:
    root.mkdir(parents=True)
    if running:
        (root / "mariadbd.pid").write_text(f"{os.getpid()}\n")
    return maria_server.MariaServer(maria_server.Handle(root=str(root), port=5998, user=None, mariadbd="/nonexistent",
                                                        password=SECRET))


MAKERS = {"postgres": _pg, "mariadb": _maria}


@pytest.mark.parametrize("engine", sorted(MAKERS))
def test_both_servers_satisfy_the_contract(tmp_path, engine):
    up = MAKERS[engine](tmp_path / "up", running=True)
    down = MAKERS[engine](tmp_path / "down", running=False)
    assert isinstance(up, PrivateServer) and isinstance(down, PrivateServer)
    assert up.alive() and up.pid() == os.getpid() and not down.alive() and down.pid() is None
    assert up.logfile.parent == up.root and isinstance(up.port, int)
    assert isinstance(up.worker_handle(), dict) and str(up.root) in str(up.worker_handle())
    up.logfile.write_text(f"line one\npassword={SECRET} here\n")
    assert up.log_tail()[0] == "line one" and not any(SECRET in ln for ln in up.log_tail())
    assert up.death_report(tmp_path / "keep") is None
    down.logfile.write_text("the end\n")
    report = down.death_report(tmp_path / "keep")
    assert report["server_log_tail"] == ["the end"] and Path(report["server_log"]).parent == tmp_path / "keep"
    assert f"encbench-{down.LOG_TAG}-{down.port}-server.log" == Path(report["server_log"]).name
    down.keep = True
    down.stop()  # --keep: left as it is
    assert down.root.is_dir()
    down.keep = False
    down.stop()
    down.stop()  # idempotent
    assert not down.root.exists()


def test_the_owner_record_names_the_engine(monkeypatch):
    seen = []
    monkeypatch.setattr(private_server.owners, "spawned", lambda pid, what, d: seen.append((pid, what, d)))
    private_server.record_spawned(42, pg_server.PgServer.ENGINE, "/r", metered=False)
    private_server.record_spawned(43, maria_server.MariaServer.ENGINE, "/s", metered=True)
    assert seen == [(42, "PostgreSQL server", "/r"), (43, "MariaDB server under valgrind", "/s")]


def test_a_server_that_did_not_start_under_valgrind_keeps_its_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(f"==1== valgrind: bad\npassword={SECRET}\n")
    e = private_server.start_failed("MariaDB", "maria", log, 7, "it died", {"keep_dir": str(tmp_path / "k")})
    assert str(e) == "the private MariaDB server did not start under valgrind: it died"
    kept = tmp_path / "k" / "encbench-maria-valgrind-7-server.log"
    assert kept.is_file() and SECRET not in kept.read_text() and str(kept) in e.hint
    plain = private_server.start_failed("PostgreSQL", "pg", log, 7, "it died", None, hint="run with --keep")
    assert str(plain) == "the private PostgreSQL server did not start: it died" and plain.hint == "run with --keep"


def _imports(path: Path) -> set[str]:
    """The encbench packages a module imports (relative imports resolved)."""
    pkg = path.relative_to(SRC).parent.parts
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else ()
            name = ".".join([*base, *(node.module or "").split(".")]) if node.level else (node.module or "")
            out.update(f"{name.strip('.')}.{a.name}" for a in node.names)  # what is imported, module or name
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


# the shared data set, vocabulary every engine needs: it leaves engines/sqlite for the bottom package (issue 29
# item 5, the vocabulary move); until then the one import of another engine's folder allowed
SHARED_DATA = "encbench.vocab.datagen"


@pytest.mark.parametrize("engine", ["postgres", "mariadb", "sqlite", "local"])
def test_an_engine_folder_imports_no_other_engine_folder(engine):
    others = {e for e in ("postgres", "mariadb", "sqlite") if e != engine}
    paths = sorted((SRC / "encbench" / "engines" / engine).glob("*.py"))
    assert paths
    bad = []
    for path in paths:
        for name in _imports(path):
            parts = name.replace("encbench.", "", 1).split(".")
            if parts[:1] == ["engines"] and len(parts) > 1 and parts[1] in others and not name.startswith(SHARED_DATA):
                bad.append(f"{path.name}: {name}")
    assert not bad
