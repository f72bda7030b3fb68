"""encbench.profiling.profiler: categories, the profile operations, what an overhead is spent on."""

from __future__ import annotations

from pathlib import Path

import pytest

import encbench.engines  # noqa: F401 (the engines hand their profile categories to the profiler)
from encbench.profiling import profiler
from encbench.profiling.flame import Frame, Sample
from encbench.workloads.base import Operation

SO = "/x/site-packages/sqlcipher3/_sqlite3.cpython-311-x86_64-linux-gnu.so"


@pytest.mark.parametrize("sym, dso, cat", [
    ("aesni_cbc_decrypt", SO, "libcrypto"), ("sha512_block_data_order_avx2", SO, "libcrypto"),
    ("EVP_DecryptUpdate", "/usr/lib/libcrypto.so.3", "libcrypto"), ("sqlcipher_page_cipher", SO, "sqlcipher"),
    ("btreeParseCellPtr", SO, "sqlite"), ("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.11.so.1.0", "python"),
    ("clear_page_erms", "[kernel.kallsyms]", "kernel"), ("memcpy", "/lib/x86_64-linux-gnu/libc.so.6", "libc"),
    ("whatever", "/opt/thing.so", "other"),
])
def test_category_of(sym, dso, cat):
    assert profiler.category_of(sym, dso) == cat


def test_categories_come_from_the_engines_in_the_order_they_are_classified():
    """Each engine declares its own categories; the table keeps the order (and the names) stored until now:
    the in-process engine's extension before Python's objects, the server engines after the runtime."""
    assert [c for c, _, _ in profiler.categories()] == [
        "kernel", "libcrypto", "libcrypto", "sqlcipher", "sqlite", "python", "libc", "postgres", "mariadb"]
    assert profiler.category_of("ExecScan", "/usr/lib/postgresql/15/bin/postgres") == "postgres"
    assert profiler.category_of("row_search_mvcc", "/usr/sbin/mariadbd") == "mariadb"
    assert profiler.category_of("PyObject_Call", "/usr/lib/postgresql/15/lib/plpython3.so") == "python"


def _samples(spec: dict[tuple[str, str], int]) -> list[Sample]:
    return [Sample("python", 1, 1, [Frame("main", "python"), Frame(sym, dso)]) for (sym, dso), n in spec.items()
            for _ in range(n)]


def test_categorize_and_leaf_counts():
    s = _samples({("btreeParseCellPtr", SO): 6, ("aesni_cbc_decrypt", SO): 3, ("[unknown]", SO): 1})
    assert profiler.categorize(s) == pytest.approx({"sqlite": 0.7, "libcrypto": 0.3})
    assert profiler.leaf_counts(s)["btreeParseCellPtr"] == 6
    assert profiler.leaf_counts(s)["[unknown] in _sqlite3.cpython-311-x86_64-linux-gnu.so"] == 1


def test_with_profiles_only_in_warmups_and_not_for_hash():
    class W:
        params = ()
        reads_only = True

    class Hash(W):
        params = (type("P", (), {"name": "profile"})(),)

    ops = [Operation("scan", lambda: None)]
    assert profiler.with_profiles(W(), None, Path("."), {"profile": 1, "_warmup": False}, ops) == ops
    assert profiler.with_profiles(W(), None, Path("."), {"_warmup": True}, ops) == ops
    assert profiler.with_profiles(Hash(), None, Path("."), {"profile": 1, "_warmup": True}, ops) == ops
    out = profiler.with_profiles(W(), None, Path("."), {"profile": 1, "_warmup": True}, ops)
    assert [o.name for o in out] == ["scan", "profile:scan"]


def _doc(base_leaves: dict, cont_leaves: dict, reps=(10, 10), hz=1000) -> dict:
    def op(leaves, r):
        n = sum(leaves.values())
        cats = {}
        for (sym, dso), k in leaves.items():
            c = profiler.category_of(sym, dso)
            cats[c] = cats.get(c, 0) + k / n
        return {"operation": "profile:scan", "extra": {"profile_repeats": r, "profile": {
            "sample_count": n, "frequency_hz": hz, "categories": cats,
            "leaf_samples": {sym: k for (sym, _), k in leaves.items()}, "folded": {"python;main": n}}}}

    return {"engine": {"name": "sqlite"}, "workloads": {"scan-eq": {"params": {"profile": 1}}}, "runs": [
        {"workload": "scan-eq", "variant": {"encryption": "off"}, "variant_label": "off", "warmup": True,
         "operations": [op(base_leaves, reps[0])]},
        {"workload": "scan-eq", "variant": {"encryption": "on"}, "variant_label": "on", "warmup": True,
         "operations": [op(cont_leaves, reps[1])]}]}


COMPS = [{"workload": "scan-eq", "operation": "scan", "baseline": "off", "contender": "on", "metric": "cpu_s"}]


def test_finding_outside_the_cipher():
    """Warm scan-eq as measured: the added time is in SQLite's b-tree code, none in the cipher."""
    doc = _doc({("btreeParseCellPtr", SO): 500, ("sqlite3VdbeExec", SO): 500},
               {("btreeParseCellPtr", SO): 1000, ("sqlite3VdbeExec", SO): 500})
    (f,) = profiler.findings(doc, COMPS)
    assert f["baseline_cpu_s"] == pytest.approx(0.1) and f["added_cpu_s"] == pytest.approx(0.05)
    assert f["added_by_function"]["btreeParseCellPtr"] == pytest.approx(0.05)
    line = profiler.finding_line(f)
    assert "(+50%)" in line and "btreeParseCellPtr 100%" in line and "not decryption" in line


def test_finding_in_the_cipher():
    doc = _doc({("btreeParseCellPtr", SO): 500}, {("btreeParseCellPtr", SO): 500, ("aesni_cbc_decrypt", SO): 400,
                                                  ("sqlcipher_page_hmac", SO): 100})
    line = profiler.finding_line(profiler.findings(doc, COMPS)[0])
    assert "libcrypto 80%" in line and "sqlcipher 20%" in line and "pages are being decrypted" in line


def test_notes_and_flame_files(tmp_path):
    doc = _doc({("btreeParseCellPtr", SO): 5}, {("btreeParseCellPtr", SO): 9})
    assert profiler.notes(doc, COMPS)[0].startswith("CPU profile (perf, warmup runs): scan-eq/scan on vs off")
    files = profiler.flame_files(doc, tmp_path / "r")
    assert len(files) == 2 and all(Path(f).read_text().startswith("<?xml") for f in files)
    doc["runs"] = []
    assert profiler.notes(doc, COMPS) == ["--profile records during the warmup runs, and there were none: "
                                          "use --warmups 1"]
