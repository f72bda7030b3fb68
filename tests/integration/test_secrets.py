"""Issue 11, item 3: no password, in any form, reaches any output.

Each secret form is given to the real CLI against real servers started here (PostgreSQL and
MariaDB, with one login role per form and a distinctive password), or to the SQLCipher engine
(--key-file, ENCBENCH_KEY). Then EVERY output is searched for EVERY secret, raw and as it could
be written (JSON-escaped, URL-encoded, shell-quoted, HTML-escaped, each word of it): stdout and
stderr of the run, the result file, `show` in table, markdown and json, the HTML report,
`compare`, and every file encbench wrote in its cache and data directories. 0 hits.
"""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path
from urllib.parse import quote

import pytest

from integration_helpers import HAVE_MARIADB, HAVE_PG

SECRETS = {
    "uri": "UriPw-4f1d9aQz",
    "kv_quoted": "Kvq9x Qunique7731",  # needs libpq quoting: password='Kvq9x Qunique7731'
    "kv_plain": "KvPlainPw-88c2Wx",
    "pgpassword": "PgEnvPw-3b7eKt",
    "mysql_uri": "MyUriPw-61aa Zq",  # a space, URL-encoded in the DSN
    "mysql_pwd": "MyEnvPw-0c3fHr",
    "my_cnf": "MyCnfPw-9e2dLs",
    "key_file": "KeyFilePw-5d7aQm",
    "encbench_key": "EnvKeyPw-2b8cVn",
}
RUN = ("--runs", "1", "--warmups", "0", "--quick")


def forms(secret: str) -> set[str]:
    """Every way the secret could be written out."""
    out = {secret, json.dumps(secret)[1:-1], quote(secret), quote(secret, safe=""), shlex.quote(secret),
           html.escape(secret), secret.replace(" ", "\\ "), secret.replace(" ", "+")}
    out |= {w for w in secret.split() if len(w) >= 6}
    return out


def outputs(encbench, tmp_path: Path, result: Path, res, env: dict) -> dict[str, str]:
    """Everything a user or a file could see after the run."""
    seen = {"stdout": res.stdout, "stderr": res.stderr}
    if result.exists():
        seen["result file"] = result.read_text()
        for fmt in ("table", "markdown", "json"):
            r = encbench("show", str(result), "--format", fmt, env=env)
            assert r.returncode == 0, str(r)
            seen[f"show {fmt}"] = r.stdout + r.stderr
        report = tmp_path / "report.html"
        r = encbench("report", str(result), "-o", str(report), env=env)
        assert r.returncode == 0, str(r)
        seen["html report"] = report.read_text() + r.stdout + r.stderr
        for fmt in ("table", "json"):
            r = encbench("compare", str(result), str(result), "--format", fmt, env=env)
            seen[f"compare {fmt}"] = r.stdout + r.stderr
    for root in {Path(env["XDG_CACHE_HOME"]), tmp_path}:
        for f in root.rglob("*"):
            if f.is_file() and not f.is_symlink() and f.name not in (".my.cnf", "key"):
                seen[f"file {f}"] = f.read_bytes().decode("latin-1")
    return seen


def assert_no_secret(seen: dict[str, str]) -> None:
    hits = [(where, name, form) for name, secret in SECRETS.items() for form in forms(secret)
            for where, text in seen.items() if form in text]
    assert hits == [], hits
    assert len(seen) >= 2


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "xdg")}


# -- PostgreSQL: URI, key=value quoted and unquoted, PGPASSWORD -----------------------------------

@pytest.fixture(scope="module")
def postgres():
    if not HAVE_PG:
        pytest.skip("PostgreSQL server binaries not installed")
    import psycopg

    from encbench.engines.postgres import server as pg_server

    server = pg_server.start()
    try:
        with psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True) as c:
            for form in ("uri", "kv_quoted", "kv_plain", "pgpassword"):
                c.execute(f"CREATE ROLE bench_{form} LOGIN SUPERUSER PASSWORD '{SECRETS[form]}'")
        yield server
    finally:
        server.stop()


def _pg_dsn(server, form: str) -> tuple[str, dict]:
    host = f"host=127.0.0.1 port={server.port} dbname=postgres user=bench_{form}"
    return {
        "uri": (f"postgresql://bench_uri:{quote(SECRETS['uri'])}@127.0.0.1:{server.port}/postgres", {}),
        "kv_quoted": (f"{host} password='{SECRETS['kv_quoted']}'", {}),
        "kv_plain": (f"{host} password={SECRETS['kv_plain']}", {}),
        "pgpassword": (host, {"PGPASSWORD": SECRETS["pgpassword"]}),
    }[form]


@pytest.mark.parametrize("form", ["uri", "kv_quoted", "kv_plain", "pgpassword"])
def test_postgres_password_never_shown(encbench, tmp_path, env, postgres, form):
    dsn, extra = _pg_dsn(postgres, form)
    env = dict(env, **extra)
    result = tmp_path / "out" / "r.json"
    result.parent.mkdir()
    res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--workload", "connect", "--variant", "tls=off,on",
                   *RUN, "-o", str(result), env=env)
    assert res.returncode == 0, str(res)
    doc = json.loads(result.read_text())
    assert "--dsn" in doc["config"]["command"]  # the command is there, its password is not
    assert_no_secret(outputs(encbench, tmp_path, result, res, env))


def test_postgres_password_in_errors_never_shown(encbench, tmp_path, env, postgres):
    """A wrong password and a malformed DSN: the error lines never echo the secret either."""
    result = tmp_path / "r.json"
    host = f"host=127.0.0.1 port={postgres.port} dbname=postgres user=bench_kv_quoted"
    for dsn in (f"{host} password='{SECRETS['kv_quoted']}x'", f"{host} password='{SECRETS['kv_quoted']}",
                f"postgresql://bench_uri:{quote(SECRETS['uri'])}@127.0.0.1:notaport/postgres"):
        res = encbench("run", "--engine", "postgres", "--dsn", dsn, "--workload", "connect", *RUN,
                       "-o", str(result), env=env)
        assert res.returncode != 0 and res.returncode != 1, str(res)
        assert_no_secret({"stdout": res.stdout, "stderr": res.stderr})
    res = encbench("run", "--engine", "postgres", "--dsn", "x", f"password={SECRETS['kv_plain']}", env=env)
    assert res.returncode == 2
    assert_no_secret({"stdout": res.stdout, "stderr": res.stderr})  # argparse's "unrecognized arguments"


# -- MariaDB: URI, MYSQL_PWD, ~/.my.cnf -----------------------------------------------------------

@pytest.fixture(scope="module")
def mariadb():
    if not HAVE_MARIADB:
        pytest.skip("MariaDB server binaries not installed")
    from encbench.engines.mariadb import server as maria_server

    server = maria_server.start(base=maria_server.BENCH, tls=True)
    try:
        conn = server.handle.connect()
        try:
            cur = conn.cursor()
            for form in ("mysql_uri", "mysql_pwd", "my_cnf"):
                cur.execute(f"CREATE USER 'bench_{form}'@'%%' IDENTIFIED BY %s", (SECRETS[form],))
                cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO 'bench_{form}'@'%'")
        finally:
            conn.close()
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("form", ["mysql_uri", "mysql_pwd", "my_cnf"])
def test_mariadb_password_never_shown(encbench, tmp_path, env, mariadb, form):
    port = mariadb.handle.port
    if form == "mysql_uri":
        dsn = f"mysql://bench_mysql_uri:{quote(SECRETS['mysql_uri'], safe='')}@127.0.0.1:{port}/"
    else:
        dsn = f"mysql://bench_{form}@127.0.0.1:{port}/"
    if form == "mysql_pwd":
        env = dict(env, MYSQL_PWD=SECRETS["mysql_pwd"])
    if form == "my_cnf":
        (Path(env["HOME"]) / ".my.cnf").write_text(f"[client]\npassword={SECRETS['my_cnf']}\n")
    result = tmp_path / "out" / "r.json"
    result.parent.mkdir()
    res = encbench("run", "--engine", "mariadb", "--dsn", dsn, "--workload", "connect", "--variant", "tls=off,on",
                   *RUN, "-o", str(result), env=env)
    assert res.returncode == 0, str(res)
    assert_no_secret(outputs(encbench, tmp_path, result, res, env))


# -- SQLCipher: --key-file and ENCBENCH_KEY --------------------------------------------------------

@pytest.mark.parametrize("form", ["key_file", "encbench_key"])
def test_sqlcipher_key_never_shown(encbench, tmp_path, env, form):
    args = []
    if form == "key_file":
        key = tmp_path / "key"
        key.write_text(SECRETS["key_file"] + "\n")
        args = ["--key-file", str(key)]
    else:
        env = dict(env, ENCBENCH_KEY=SECRETS["encbench_key"])
    result = tmp_path / "out" / "r.json"
    result.parent.mkdir()
    res = encbench("run", "--workload", "scan-eq", "--size", "1MB", "--runs", "1", "--warmups", "0", *args,
                   "--data-dir", str(tmp_path / "data"), "-o", str(result), env=env)
    assert res.returncode == 0, str(res)
    assert json.loads(result.read_text())["config"]["key_source"] == {"key_file": "key-file"}.get(form, "ENCBENCH_KEY")
    assert_no_secret(outputs(encbench, tmp_path, result, res, env))


def test_the_search_finds_what_it_looks_for():
    """The grep above can fail: each secret, in each form it could be written, is found."""
    for name, secret in SECRETS.items():
        for text in (f"x {secret} y", json.dumps({"dsn": f"password='{secret}'"}), f"u:{quote(secret)}@h",
                     html.escape(f"<pre>{secret}</pre>"), shlex.quote(f"password={secret}")):
            with pytest.raises(AssertionError):
                assert_no_secret({"a": text, "b": ""})
