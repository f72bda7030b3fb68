"""Issue 24, SQLCipher's knobs (engines/sqlite/knobs.py): the sweeps name real keys and values, every knob the issue
names is there (the page cache's share of the data too), and the cache's explanation reads the oltp costs."""

from __future__ import annotations

from encbench.engines import ENGINES
from encbench.engines.sqlite import knobs
from encbench.vocab.variants import matrix, parse_filters


def test_sweeps_name_real_keys_and_values():
    engine = ENGINES.get("sqlite")
    keys = engine.variant_keys
    for quick in (True, False):
        for sweep in knobs.sweeps(quick):
            filters = parse_filters(list(sweep.variants), keys)
            assert sweep.knob in filters and len(filters[sweep.knob]) >= 2, sweep
            assert any(k.key == sweep.knob for k in knobs.KNOBS), sweep
            for wl in sweep.workloads:
                variants = matrix(keys, filters, wl)
                assert {v[sweep.knob] for v in variants if sweep.knob in v} == set(filters[sweep.knob]), (sweep, wl)
    assert {k.key for k in knobs.KNOBS} == {"hmac", "kdf_iter", "key", "kdf_algorithm", "page_size", "memory"}
    assert "memory" not in {s.knob for s in knobs.sweeps(True)}  # --quick: the scans only
    memory = next(s for s in knobs.sweeps(False) if s.knob == "memory")
    assert memory.workloads == ("oltp",) and "encryption=off,on" in memory.variants  # both: what encryption adds
    (knob,) = [k for k in knobs.KNOBS if k.key == "memory"]
    assert all(dict(c.scope).get("encryption") == "on" for c in knob.costs)  # ranked on the encrypted files only


def test_the_cache_explained_from_what_encryption_adds_at_each_share():
    on25 = "encryption=on,page_size=4096,script=tpcb-like,memory=25%,clients=1"
    on100 = on25.replace("memory=25%", "memory=100%")
    analysis = {"oltp_costs": [
        {"contender": on25, "added_cpu_us_per_txn": 63.2, "pages_read_per_txn": 0.77},
        {"contender": on100, "added_cpu_us_per_txn": 41.0, "pages_read_per_txn": 0.0}]}
    entry = {"file": "f.json", "baseline": on25, "contender": on100, "default": "25%", "value": "100%"}
    text = knobs.explain_memory(entry, {"analyses": {"f.json": analysis}})
    assert text.startswith("encryption adds 63 µs of CPU per transaction with 25% of the data in the cache "
                           "(0.77 page reads each, every one decrypted) and 41 µs with 100% (0.00)"), text
    assert knobs.explain_memory(entry, {"analyses": {"f.json": {"oltp_costs": []}}}) is None
