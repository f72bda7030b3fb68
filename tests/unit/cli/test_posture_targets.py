"""leak-check --posture --targets FILE: one bad line of the file is that line's failure, with its reason and exit
code; the other servers are still read (a fake posture stands in for the servers; the real ones:
tests/integration/test_leak_check_existing.py)."""

from __future__ import annotations

from types import SimpleNamespace

from encbench.cli import leakcheck
from encbench.tls import fleet


def test_a_bad_line_fails_alone(monkeypatch, tmp_path):
    f = tmp_path / "fleet.txt"
    f.write_text("postgresql://u:secretpw@127.0.0.1:5432/postgres\nnot-a-dsn\nmysql://u@127.0.0.1:3306/\n")
    targets = fleet.read_targets(f, make=leakcheck.posture_target, example=leakcheck.POSTURE_EXAMPLE, keep_bad=True)
    assert [t.line for t in targets] == [1, 2, 3] and isinstance(targets[1], fleet.BadLine)
    read = []

    def fake_posture(self, dsn):
        read.append(dsn)
        return SimpleNamespace(plaintext=False, items=[], to_dict=lambda: {})

    for t in (targets[0], targets[2]):
        monkeypatch.setattr(type(t.engine), "check_available", lambda self: None)
        monkeypatch.setattr(type(t.engine), "posture", fake_posture)
    outcomes = leakcheck.posture_all(targets, 2)
    assert len(read) == 2 and [o.exit_code for o in outcomes] == [0, 4, 0]
    bad = outcomes[1]
    assert "line 2" in bad.error and bad.to_dict()["engine"] == "-" and bad.to_dict()["posture"] is None
    table = leakcheck.posture_table(outcomes)
    assert table[-1] == "3 target(s): 2 read, 1 failed, 0 with plaintext at rest"
    assert all("secretpw" not in line for line in table)
    assert fleet.combined_exit_code((o.exit_code for o in outcomes), 13) == 4
