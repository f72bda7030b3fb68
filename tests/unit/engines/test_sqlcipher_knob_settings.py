"""Issue 30 item 3: `advise` prints the exact setting of the value measured. Each PRAGMA an advise line prints for a
SQLCipher knob value is set on a real SQLCipher file (sqlcipher3), the file written, closed, opened again with the same
PRAGMAs, and read back: it is the value measured."""

from __future__ import annotations

import re

import pytest

from encbench.analysis import advise
from encbench.engines.sqlite import knobs

sqlcipher3 = pytest.importorskip("sqlcipher3")

PRAGMA = re.compile(r"PRAGMA (\w+) = ([\w-]+)")
READ_BACK = {"ON": "1", "OFF": "0"}  # cipher_use_hmac reads back as 1 / 0


def _printed(knob, value: str) -> str:
    """The `(set: ...)` of the advise line of this value, made as advise makes it (its _entry, then line)."""
    cost = knob.costs[0]
    base, cont = f"{knob.key}={knob.default}", f"{knob.key}={value}"
    groups = {(cost.workload, "op", base): {cost.metric: [1.0] * 6},
              (cost.workload, "op", cont): {cost.metric: [0.5] * 6}}
    e = advise._entry(knob, cost, groups, cost.workload, "op", base, cont, {knob.key: value}, "f.json")
    e.update(standing=advise.standing(e), also=[], explanation=None)
    return advise.line(e).rpartition("(set: ")[2]


def _open(path, pragmas: list[str]):
    conn = sqlcipher3.connect(str(path))
    conn.execute("PRAGMA key = \"x'" + "ab" * 32 + "'\"")  # a raw key: no PBKDF2, the test stays fast
    for p in pragmas:
        conn.execute(p)
    return conn


CASES = [(k.key, v) for k in knobs.KNOBS if k.key in knobs.PRAGMAS
         for v in dict.fromkeys([k.default, *k.gives_up, *(["1000", "64000"] if k.key == "kdf_iter" else [])])]


@pytest.mark.parametrize("key,value", CASES)
def test_each_printed_pragma_sets_the_value_measured(tmp_path, key, value):
    knob = next(k for k in knobs.KNOBS if k.key == key)
    printed = PRAGMA.findall(_printed(knob, value))
    assert printed, _printed(knob, value)
    pragmas = [f"PRAGMA {name} = {setting}" for name, setting in printed]
    path = tmp_path / "t.db"
    conn = _open(path, pragmas)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    conn = _open(path, pragmas)  # the file opens again with them (they are what it was written with)
    assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    for name, setting in printed:
        got = str(conn.execute(f"PRAGMA {name}").fetchone()[0])
        assert got == READ_BACK.get(setting, setting), (name, setting, got)
    conn.close()
    if key == "hmac":  # the one named by the value: HMAC_SHA1 for sha1 (not SHA256), cipher_use_hmac = OFF for off
        assert (f"HMAC_{value.upper()}" in _printed(knob, value)) == (value != "off")
    if key == "kdf_algorithm":
        assert f"PBKDF2_HMAC_{value.upper()}" in _printed(knob, value)


def test_the_key_form_is_named_per_value():
    knob = next(k for k in knobs.KNOBS if k.key == "key")
    assert "x'<64 hex digits>'" in _printed(knob, "raw") and "passphrase" in _printed(knob, "passphrase")
