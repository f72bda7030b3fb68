"""A per-page decrypt cost only where the measured processes hold the decryption, set beside the raw cipher only
when that is the cipher the variant runs (Engine.uncounted_crypto, Engine.raw_cipher_values)."""

from __future__ import annotations

from pathlib import Path

from encbench.analysis import summary as an
from encbench.engines import ENGINES
from encbench.lab import results

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")
GOLDEN = TESTS / "golden" / "results-v1.json"


def _analysis():
    return an.analyze(results.load(GOLDEN))


def test_the_engines_own_cipher_gets_its_per_page_line_beside_the_raw_cipher():
    reads = [d for d in _analysis().derived if d["kind"] == "read"]
    assert reads and all(d["per_page_cpu_s"] > 0 for d in reads)
    assert all(d["raw_cipher_mb_per_s_per_core"] > 0 for d in reads)  # set beside the calibration


def test_decryption_in_no_measured_process_gets_no_per_page_figure_and_a_note(monkeypatch):
    sqlite = ENGINES.get("sqlite")
    before = _analysis()
    monkeypatch.setattr(sqlite, "uncounted_crypto", {"on": "it decrypts in kernel workers no probe measures"})
    after = _analysis()
    assert [d for d in before.derived if d["kind"] == "read"]
    assert not [d for d in after.derived if d["kind"] == "read"]  # no misleading MB/s per core
    assert "no per-page decrypt cost for encryption=on: it decrypts in kernel workers no probe measures" in after.notes
    assert not any("no per-page decrypt cost" in n for n in before.notes)


def test_a_cipher_other_than_the_calibrated_one_is_not_set_beside_it(monkeypatch):
    sqlite = ENGINES.get("sqlite")
    before = [d for d in _analysis().derived if d["kind"] == "read"]
    monkeypatch.setattr(sqlite, "raw_cipher_values", ())
    after = [d for d in _analysis().derived if d["kind"] == "read"]
    assert [d["per_page_cpu_s"] for d in after] == [d["per_page_cpu_s"] for d in before]  # the cost stays
    assert "raw_cipher_mb_per_s_per_core" in before[0] and "raw_cipher_mb_per_s_per_core" not in after[0]
    assert not set(after[0]) - set(before[0])
