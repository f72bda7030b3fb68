"""SQLite's oltp driver: encbench's own update-one and update-batch scripts (1 and 8 accounts changed in one
transaction, which calibrate runs to price a commit apart from a page written) and the commits each run counts."""

from __future__ import annotations

import random
import sqlite3

from encbench.engines.sqlite import oltp


def _db(tmp_path):
    path = tmp_path / "t.db"
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    oltp.populate(conn, oltp.MIN_ACCOUNTS)
    conn.close()
    return path


def test_update_batch_changes_batch_accounts_in_one_commit(tmp_path):
    conn = sqlite3.connect(_db(tmp_path), isolation_level=None)
    before = conn.total_changes
    oltp.transaction("update-batch", conn, random.Random(1), oltp.MIN_ACCOUNTS, 1, 10)
    assert conn.total_changes - before == oltp.BATCH and not conn.in_transaction
    before = conn.total_changes
    oltp.transaction("update-one", conn, random.Random(2), oltp.MIN_ACCOUNTS, 1, 10)
    assert conn.total_changes - before == 1 and not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM pgbench_accounts WHERE abalance != 0").fetchone()[0] >= oltp.BATCH - 1
    assert conn.execute("SELECT count(*) FROM pgbench_history").fetchone()[0] == 0  # no history row: accounts only


def test_a_run_counts_its_commits_only_for_writing_scripts(tmp_path):
    path = _db(tmp_path)
    connect = lambda p: sqlite3.connect(p, isolation_level=None, check_same_thread=False)  # noqa: E731
    c = oltp.Clients(connect, lambda conn: None, path, 1, 1.0, oltp.MIN_ACCOUNTS, 42)
    try:
        for script in oltp.SCRIPTS:
            got = c.drive(script, 0.05)
            assert got["transactions"] > 0
            assert got["commits"] == (got["transactions"] if script in oltp.WRITES else 0), script
    finally:
        c.close()


def test_a_failing_write_transaction_is_rolled_back_and_its_error_raised(tmp_path):
    conn = sqlite3.connect(_db(tmp_path), isolation_level=None)
    conn.execute("DROP TABLE pgbench_history")  # tpcb-like's last statement then fails
    try:
        oltp.transaction("tpcb-like", conn, random.Random(1), oltp.MIN_ACCOUNTS, 1, 10)
    except sqlite3.OperationalError as e:
        assert "pgbench_history" in str(e)
    else:
        raise AssertionError("the failing statement's error was not raised")
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM pgbench_accounts WHERE abalance != 0").fetchone()[0] == 0
