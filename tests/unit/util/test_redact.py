"""redact(): every password form hidden, command lines redacted before quoting, linear time."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest

from encbench.util.redact import HIDDEN, command_line, redact

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")

SECRET = "Pw9z Qunique7731"


@pytest.mark.parametrize("text,secret", [
    ("postgresql://bench:S3cretUri@127.0.0.1:5432/app", "S3cretUri"),
    ("mysql://u:pa ss word@h:3306/db", "pa ss word"),  # a space: urlparse keeps it in the password
    ("mysql://u:p@ss@h/db", "p@ss"),  # urlparse splits at the last '@'
    ("mysql://u:pa/ss@h/db", "pa/ss"),
    ("postgresql://:OnlyPw@h/db", "OnlyPw"),
    (f"host=h user=bench2 password='{SECRET}' dbname=app", SECRET),
    ("host=h password=plainSecret dbname=app", "plainSecret"),
    ("host=h password = 'a\\'b c' dbname=x", "a\\'b c"),
    ("password='unterminated secret", "unterminated secret"),
    ('password="dq secret" x=1', "dq secret"),
    ("sslpassword=keyPass1 host=h", "keyPass1"),
    ("postgresql://u@h/db?sslmode=require&password=QuerySecret&x=1", "QuerySecret"),
    ("PGPASSWORD=envsecret MYSQL_PWD=envsecret2 encbench", "envsecret"),
    ("MYSQL_PWD=envsecret2", "envsecret2"),
])
def test_hidden(text, secret):
    out = redact(text)
    assert secret not in out, out
    for part in secret.split():
        assert part not in out, out
    assert HIDDEN in out


def test_what_is_not_a_secret_stays():
    for text in ("postgresql://h:5432/db", "see http://example.com/a:b for help", "host=h port=5432 dbname=app",
                 "mysql://user@h:3306/db"):
        assert redact(text) == text
    assert redact("postgresql://bench:pw@127.0.0.1:5432/app?sslmode=require&x=1") == \
        f"postgresql://bench:{HIDDEN}@127.0.0.1:5432/app?sslmode=require&x=1"


def test_command_line_redacts_each_argument_before_quoting():
    # issue 11: shell quoting first turned password='Pw9z Qunique7731' into '"'"'Pw9z ... that leaked
    argv = ["run", "--engine", "postgres", "--dsn", f"host=127.0.0.1 user=bench2 password='{SECRET}' dbname=app",
            "--dsn=mysql://u:secretEq@h/db", "-o", "out file.json"]
    line = command_line(argv)
    for part in (SECRET, "Pw9z", "Qunique7731", "secretEq"):
        assert part not in line, line
    assert shlex.split(line) == ["encbench", "run", "--engine", "postgres", "--dsn",
                                 f"host=127.0.0.1 user=bench2 password={HIDDEN} dbname=app",
                                 f"--dsn=mysql://u:{HIDDEN}@h/db", "-o", "out file.json"]


ADVERSARIAL = {
    "letters": lambda n: "a" * n,
    "schemes": lambda n: "a://" * (n // 4),
    "schemes-userinfo": lambda n: "a://u:" * (n // 6),
    "keys": lambda n: "password=" * (n // 9),
    "quotes": lambda n: "password='" + "\\'" * (n // 2),
    "colons": lambda n: "x:" * (n // 2),
    "ats": lambda n: "@" * n,
    "spaces": lambda n: "password" + " " * n,
}


def _seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()  # this process's CPU: other work on a busy machine does not count
        redact(text)
        best = min(best, time.process_time() - t0)
    return best


@pytest.mark.parametrize("kind", ADVERSARIAL)
def test_linear_time(kind):
    """4x the input takes about 4x the time; quadratic would be 16x (it was: 100,000 characters took 12 s).
    The bound is about complexity, not speed: a ratio below 9 between 250 kB and 1 MB of CPU time (quadratic
    would be 16), and 1 MB in < 5 s of CPU (it was 12 s for 100 kB)."""
    make = ADVERSARIAL[kind]
    small, large = _seconds(make(250_000)), _seconds(make(1_000_000))
    assert large < 5, (kind, large)
    assert large / max(small, 1e-3) < 9, (kind, small, large)


def test_a_command_stored_by_an_older_version_is_redacted_on_load(tmp_path):
    """Before arguments were redacted ahead of quoting, a quoted key=value password reached config.command."""
    import json
    import shutil

    from encbench.lab import results
    from encbench.util.redact import stored_command

    leaked = ("encbench run --engine postgres --dsn 'host=127.0.0.1 user=bench2 password='\"'\"'Pw9z Qunique7731'\"'\"' "
              "dbname=app' -o x.json")
    assert "Qunique7731" not in stored_command(leaked)
    assert stored_command(leaked) == ("encbench run --engine postgres --dsn 'host=127.0.0.1 user=bench2 "
                                      "password=<hidden> dbname=app' -o x.json")
    assert stored_command("encbench run --quick") == "encbench run --quick"  # nothing to hide: unchanged
    golden = TESTS / "golden" / "results-v1.json"
    doc = json.loads(golden.read_text())
    doc["config"]["command"] = leaked
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    assert "Qunique7731" not in results.load(path)["config"]["command"]
