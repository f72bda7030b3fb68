"""fscrypt's per-page cost counts the kernel workers that decrypt: (server + kworker CPU, cold fscrypt) - (the same,
cold plain) over the pages read, with the Welch CI, set beside the userspace XTS calibration, and the sentence naming
the kernel driver; a file without kworker_cpu_s gets no figure and a note (Engine.kernel_worker_crypto)."""

from __future__ import annotations

import pytest

from encbench.analysis import summary as an
from encbench.analysis import stats

PAGE = 8192
PAGES = 4000
# per run: (server cpu_s, kworker_cpu_s, host_cpu_s)
PLAIN = [(0.100, 0.010, 0.20), (0.104, 0.012, 0.21), (0.098, 0.011, 0.20), (0.102, 0.009, 0.22)]
FSCRYPT = [(0.110, 1.010, 1.30), (0.112, 1.050, 1.33), (0.108, 0.990, 1.28), (0.111, 1.030, 1.31)]
GOCRYPTFS = [(0.400, 0.010, 0.50), (0.410, 0.011, 0.52), (0.395, 0.012, 0.49), (0.405, 0.010, 0.51)]
DRIVER = {"name": "xts(aes)", "driver": "xts(ecb(aes-fixed-time))", "accelerated": False,
          "implementation": "software: generic C, constant-time (aes-fixed-time), no AES instructions"}


def _run(encryption: str, cpu: float, kworker: float | None, host: float) -> dict:
    variant = {"encryption": encryption, "cache": "cold"}
    metrics = {"wall_s": cpu + 0.5, "cpu_s": cpu, "pages_read": PAGES, "host_cpu_s": host, "kworkers_exited": 0}
    if kworker is not None:
        metrics["kworker_cpu_s"] = kworker
    return {"workload": "scan-eq", "variant": variant, "variant_label": f"encryption={encryption},cache=cold",
            "operations": [{"operation": "scan", "metrics": metrics, "extra": {"cache_verified": 1},
                            "cache": {"cache": "cold", "restart_s": 0.4, "method": "restart + page cache drop"}}]}


def _doc(kworkers: bool = True, fscrypt=FSCRYPT) -> dict:
    runs = [_run("off", c, k if kworkers else None, h) for c, k, h in PLAIN]
    runs += [_run("fscrypt", c, k if kworkers else None, h) for c, k, h in fscrypt]
    runs += [_run("gocryptfs", c, k if kworkers else None, h) for c, k, h in GOCRYPTFS]
    return {
        "schema_version": 1, "status": "complete", "encbench_version": "test",
        "config": {"size_bytes": 1}, "environment": {"cpu": {"model": "x", "logical_cores": 2, "flags": {}},
                                                     "kernel": "6"},
        "engine": {"name": "postgres", "axis": "encryption", "axis_baseline": "off", "tables": None,
                   "variant_keys": [{"name": "encryption", "applies_when": []}, {"name": "cache", "applies_when": []}]},
        "workloads": {"scan-eq": {"reads_only": True}},
        "dataset": {"page_size": PAGE, "clusters": {"fscrypt": {"cipher": {"contents": DRIVER, "cpu_has_aes": True}}}},
        "calibration": {"raw_cipher": {str(PAGE): {
            "cipher": "AES-256-XTS per 8192-byte page (fscrypt's contents mode), userspace", "library": "test",
            "mb_per_s_per_core": 13000.0, "mb_per_s_ci": [12500.0, 13500.0], "per_page_cpu_s": PAGE / 13000e6,
            "method": "test"}}},
        "runs": runs,
    }


def _reads(a, contender: str) -> list[dict]:
    return [d for d in a.derived if d["kind"] == "read" and d["contender"].startswith(f"encryption={contender},")]


def test_fscrypts_cost_adds_the_kernel_workers_on_both_sides():
    a = an.analyze(_doc())
    [d] = _reads(a, "fscrypt")
    expected = stats.difference_ci([c + k for c, k, _ in PLAIN], [c + k for c, k, _ in FSCRYPT])
    assert d["added_cpu_s"] == pytest.approx(expected.value) and d["added_cpu_ci"] == pytest.approx(list(expected.ci))
    assert d["cpu_basis"] == "cpu_s + kworker_cpu_s" and "kernel-worker" in d["method"]
    assert d["per_page_cpu_s"] == pytest.approx(expected.value / PAGES)
    mb = PAGE / (expected.value / PAGES) / 1e6
    assert d["decrypt_mb_per_s_per_core"] == pytest.approx(mb)  # about 33 MB/s: the kernel's software AES
    lo, hi = d["decrypt_mb_per_s_ci"]
    assert lo < mb < hi
    # beside the userspace XTS calibration (PostgreSQL's raw_cipher_values), as a percentage of it
    assert d["raw_cipher_mb_per_s_per_core"] == 13000.0 and d["percent_of_raw_cipher"] == pytest.approx(100 * mb / 13000)
    # the broader figure: the whole machine's non-idle CPU
    host = sum(h for *_, h in FSCRYPT) / 4 - sum(h for *_, h in PLAIN) / 4
    assert d["host_added_cpu_s"] == pytest.approx(host)
    assert d["kernel_driver"]["driver"] == "xts(ecb(aes-fixed-time))" and d["kworkers_exited"] == 0
    sentence = next(n for n in a.notes if n.startswith("scan-eq/scan encryption=fscrypt,cache=cold: fscrypt decrypts"))
    assert f"decrypts at {mb:,.0f} MB/s per core [{lo:,.0f}, {hi:,.0f}] through xts(ecb(aes-fixed-time)) " \
           "(this kernel has no AES-NI driver; the CPU has AES instructions); userspace AES-256-XTS on this CPU: " \
           "13.0 GB/s per core" in sentence
    assert not any(n.startswith("no per-page decrypt cost") for n in a.notes)


def test_the_server_cpu_alone_would_miss_the_decryption():
    d = _reads(an.analyze(_doc()), "fscrypt")[0]
    server_only = stats.difference_ci([c for c, *_ in PLAIN], [c for c, *_ in FSCRYPT]).value
    assert d["added_cpu_s"] > 50 * server_only


def test_gocryptfs_stays_on_the_server_side_cpu():
    [d] = _reads(an.analyze(_doc()), "gocryptfs")
    assert "cpu_basis" not in d and "raw_cipher_mb_per_s_per_core" not in d  # GCM in its daemon, not XTS
    assert d["added_cpu_s"] == pytest.approx(stats.difference_ci([c for c, *_ in PLAIN],
                                                                 [c for c, *_ in GOCRYPTFS]).value)


def test_a_file_without_kworker_cpu_gets_no_figure_and_says_why():
    a = an.analyze(_doc(kworkers=False))
    assert not _reads(a, "fscrypt") and _reads(a, "gocryptfs")
    note = next(n for n in a.notes if n.startswith("no per-page decrypt cost for encryption=fscrypt: "))
    assert "no kworker_cpu_s" in note


def test_no_added_cpu_no_speed_claimed():
    """At a tiny size the difference can come out <= 0: a per-page figure, no speed, and the note says so."""
    a = an.analyze(_doc(fscrypt=[(c - 0.005, k, h) for c, k, h in PLAIN]))
    [d] = _reads(a, "fscrypt")
    assert d["per_page_cpu_s"] < 0
    assert d["decrypt_mb_per_s_per_core"] is None and "percent_of_raw_cipher" not in d
    assert any("no decrypt speed claimed for fscrypt" in n for n in a.notes)
    assert not any(" decrypts at " in n for n in a.notes)
