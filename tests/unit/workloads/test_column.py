"""The column workload's methods (issue 16): round trips, SIV deterministic and GCM not, a wrong key is one
clear error, the key material, the `method` key engines extend, and the operations on a real SQLite session."""

from __future__ import annotations

import pytest

from encbench.engines.sqlite.engine import SQLiteEngine, SQLiteSession
from encbench.errors import WrongKeyError
from encbench.workloads import WORKLOADS, column

KEY = column.column_key_material("a test passphrase")[0]
OTHER = column.column_key_material("another passphrase")[0]
VALUE = column.value(123)


@pytest.mark.parametrize("method", list(column.CLIENT_METHODS))
def test_each_client_method_round_trips_with_its_documented_expansion(method):
    cipher = column.cipher_for(method, KEY)
    stored = cipher.encrypt(VALUE)
    assert cipher.decrypt(stored) == VALUE
    assert len(stored) - len(VALUE) == cipher.overhead_bytes
    assert (stored == VALUE) == (method == "none")  # every other method changes the bytes stored


def test_siv_is_deterministic_and_gcm_is_not():
    siv, gcm = column.cipher_for("client-siv", KEY), column.cipher_for("client-gcm", KEY)
    assert siv.encrypt(VALUE) == siv.encrypt(VALUE) and siv.searchable
    assert gcm.encrypt(VALUE) != gcm.encrypt(VALUE) and not gcm.searchable
    assert siv.encrypt(VALUE) != siv.encrypt(column.value(124))


def test_the_same_passphrase_gives_the_same_key_and_none_gives_a_fresh_random_one():
    assert column.column_key_material("a test passphrase")[0] == KEY != OTHER
    a, source = column.column_key_material(None)
    assert len(a) == column.KEY_BYTES and a != column.column_key_material(None)[0] and "generated" in source
    # each method its own subkey: the GCM and SIV ciphertexts do not share the key material's bytes
    assert KEY.hex() not in column.cipher_for("client-siv", KEY).encrypt(VALUE).hex()


@pytest.mark.parametrize("method", ["client-gcm", "client-siv"])
def test_a_wrong_key_is_one_clear_error_not_garbage(method):
    stored = column.cipher_for(method, KEY).encrypt(VALUE)
    with pytest.raises(WrongKeyError) as e:
        column.cipher_for(method, OTHER).decrypt(stored)
    assert e.value.exit_code == 8
    line = e.value.one_line()
    assert "\n" not in line and "does not decrypt with the key given" in line and "--key-file" in line


@pytest.mark.parametrize("method", ["client-gcm", "client-siv"])
def test_a_tampered_value_is_refused(method):
    cipher = column.cipher_for(method, KEY)
    stored = bytearray(cipher.encrypt(VALUE))
    stored[-1] ^= 1
    with pytest.raises(WrongKeyError):
        cipher.decrypt(bytes(stored))


def test_an_engine_adds_its_own_methods_to_the_key():
    key = column.method_key({"pg-raw": "pgcrypto encrypt()"})
    assert key.default == ("none", "client-gcm", "client-siv") and key.workloads == ("column",)
    assert key.check("pg-raw") == "pg-raw" and "pgcrypto encrypt()" in key.description
    with pytest.raises(Exception):
        column.method_key().check("pg-raw")
    passthrough = column.cipher_for("pg-raw", KEY, {"pg-raw": True})
    assert passthrough.encrypt(VALUE) == VALUE and passthrough.searchable and not passthrough.client


def test_sqlite_offers_the_workload_with_the_client_methods_only_for_it():
    engine = SQLiteEngine()
    assert "column" in engine.workloads and "column" not in engine.default_workloads
    method = next(k for k in engine.variant_keys if k.name == "method")
    assert method.allowed == tuple(column.CLIENT_METHODS)
    assert all(not k.for_workload("column") for k in engine.variant_keys if k.name != "method")
    table = next(t for t in engine.tables() if t.workloads == ("column",))
    assert (table.axis, table.baseline) == ("method", "none")


def _run(tmp_path, method: str, rows: int = 300, lookups: int = 4) -> dict:
    """The workload's operations on a real SQLite session: {operation: extra} (check() given fake timings)."""
    variant = {"method": method}
    setup = {"rows": 0, "_passphrase": "x", "_column_key": KEY.hex()}
    session = SQLiteSession(tmp_path / f"{method}.db", variant, setup, copy_of=None, create=True)
    out = {}
    try:
        for op in WORKLOADS.get("column").operations(session, tmp_path, {"column_rows": rows, "lookups": lookups}):
            if op.before:
                op.before()
            extra = dict(op.run() or {})
            extra.update(op.check({"wall_s": 0.5, "cpu_s": 0.25}) or {})
            extra.update(op.after() or {} if op.after else {})
            out[op.name] = extra
    finally:
        session.close()
    return out


@pytest.mark.parametrize("method,indexed", [("none", 1), ("client-siv", 1), ("client-gcm", 0)])
def test_the_operations_on_sqlite_and_the_lookup_plan(tmp_path, method, indexed):
    ops = _run(tmp_path, method)
    assert list(ops) == ["insert", "read", "lookup", "update"]
    assert ops["insert"]["indexed"] == indexed and ops["lookup"]["index_used"] == indexed
    assert ("USING" in ops["lookup"]["plan"]) == bool(indexed)
    assert ops["lookup"]["rows_examined_per_lookup"] == (1 if indexed else 300)
    assert ops["read"]["read_back_equal"] == 1
    overhead = column.CLIENT_METHODS[method].overhead_bytes
    assert ops["insert"]["value_bytes_per_row"] == column.VALUE_BYTES + overhead
    assert ops["insert"]["cpu_us_per_row"] == pytest.approx(0.25e6 / 300)
    assert ops["lookup"]["qps"] == pytest.approx(4 / 0.5)
