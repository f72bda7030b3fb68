"""engines/postgres/leakcheck.py: the server log's own names, pg_dump's command line and error line (issue 28)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from encbench.engines.postgres import client
from encbench.engines.postgres import leakcheck as pg_leak
from encbench.errors import EngineUnavailableError


def test_the_server_logs_own_names_come_from_log_filename():
    assert pg_leak.log_names("postgresql-%Y-%m-%d_%H%M%S.log") == \
        ("postgresql-*-*-*_*.log", "postgresql-*-*-*_*.csv", "postgresql-*-*-*_*.json")
    assert pg_leak.log_names("pg-%a") == ("pg-*", "pg-*.csv", "pg-*.json")


class FakePsycopg:
    class conninfo:  # noqa: N801 - psycopg.conninfo's one function used here
        @staticmethod
        def make_conninfo(**kw):
            return " ".join(f"{k}={v}" for k, v in kw.items())


def test_pg_dump_gets_only_the_fields_the_dsn_has(monkeypatch):
    """Issue 28 item 6: with the server given by PGHOST/PGPORT/PGUSER/PGPASSWORD and --dsn postgresql://, pg_dump's
    environment keeps them (empty DSN fields no longer overwrite them); the password never on the command line."""
    for k, v in {"PGHOST": "127.0.0.1", "PGPORT": "5999", "PGUSER": "dba", "PGPASSWORD": "envpw"}.items():
        monkeypatch.setenv(k, v)
    argv, env = pg_leak.dump_command("pg_dump", {}, "s.leak", Path("/o"), FakePsycopg)
    assert argv == ["pg_dump", "-t", "s.leak", "-f", "/o"]
    assert (env["PGHOST"], env["PGPORT"], env["PGUSER"], env["PGPASSWORD"]) == ("127.0.0.1", "5999", "dba", "envpw")
    argv, env = pg_leak.dump_command("pg_dump", {"dbname": "app", "host": "", "password": "dsnpw"}, "s.leak",
                                     Path("/o"), FakePsycopg)
    assert argv == ["pg_dump", "-d", "dbname=app", "-t", "s.leak", "-f", "/o"]
    assert env["PGHOST"] == "127.0.0.1" and env["PGPASSWORD"] == "dsnpw" and "dsnpw" not in " ".join(argv)


def test_a_failing_pg_dump_is_reported_by_its_first_error_line(tmp_path, monkeypatch):
    tool = tmp_path / "pg_dump"
    tool.write_text(f"#!{sys.executable}\nimport sys\n"
                    "sys.stderr.write('pg_dump: error: connection to server on socket \"/run/postgresql/.s.PGSQL.5432\"'"
                    " ' failed: No such file or directory\\n\\tIs the server running locally and accepting connections'"
                    " ' on that socket?\\n')\nsys.exit(1)\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    with pytest.raises(EngineUnavailableError) as e:
        pg_leak.pg_dump(None, {}, "s.leak", tmp_path / "out.sql")
    assert str(e.value).startswith("pg_dump failed: pg_dump: error: connection to server on socket")
    assert "Is the server running" not in str(e.value)
    assert client.tool_error("\n\npg_dump: warning: x\n") == "pg_dump: warning: x"
