"""Issue 31: on a filesystem that encrypts in the kernel's worker threads (fscrypt), `calibrate`'s at-rest fit counts
the CPU where the work is done (the server's plus the kernel workers', as `show` and the held-out check measure a
mix's added CPU) and a page read as a page the kernel read from storage (/proc/PID/io bytes / the page size)."""

from __future__ import annotations

import pytest

from encbench.analysis import calibration, fit

KEYS = [{"name": k, "applies_when": []} for k in ("encryption", "memory", "clients", "script")]
ENGINE = {"name": "postgres", "axis": "encryption", "axis_baseline": "off", "variant_keys": KEYS}
PAGE = 8192
# per transaction: the engine's block reads, the kernel's pages read (1.3 x: what the kernel reads around them),
# page writes, WAL bytes
MIXES = {("select-only", "25%"): (1.3, 1.7, 0.0, 0.0, 160e-6), ("select-only", "100%"): (0.0, 0.0, 0.0, 0.0, 90e-6),
         ("tpcb-like", "25%"): (1.8, 2.9, 1.6, 3600.0, 950e-6), ("tpcb-like", "100%"): (0.0, 0.05, 0.0, 8200.0, 720e-6)}
KREAD, WRITE, LOG = 380e-6, 50e-6, 10e-9  # the truth: per kernel page read, per page written, per WAL byte
SERVER_SHARE = 0.15  # of the added CPU, the share in the server's own processes: the rest in kernel workers


def _runs(counters: tuple[str, ...] = ("server_read_bytes", "device_read_bytes"), kworkers: bool = True) -> list:
    out = []
    for (script, memory), (reads, kreads, writes, wal, plain) in MIXES.items():
        for enc in ("off", "fscrypt"):
            for i in range(6):
                noise = 1 + 0.004 * ((i * 7 + len(script) + len(enc)) % 5 - 2)
                added = (KREAD * kreads + WRITE * writes + LOG * wal) if enc == "fscrypt" else 0.0
                n = 1000
                m = {"cpu_s": n * (plain + SERVER_SHARE * added) * noise, "pages_read": n * reads,
                     "pages_written": n * writes, "wal_bytes": n * wal}
                if kworkers:
                    m["kworker_cpu_s"] = n * (20e-6 + (1 - SERVER_SHARE) * added) * noise
                for c in counters:
                    m[c] = n * kreads * PAGE
                variant = {"encryption": enc, "memory": memory, "clients": "1", "script": script}
                out.append({"workload": "oltp", "variant": variant, "warmup": False,
                            "variant_label": ",".join(f"{k}={v}" for k, v in variant.items()),
                            "operations": [{"operation": "mix", "metrics": m,
                                            "extra": {"transactions": n, "page_size": PAGE}}]})
    return out


def _doc(**kw) -> dict:
    return {"engine": ENGINE, "config": {"runs": 6}, "runs": _runs(**kw)}


def test_fscrypt_fit_counts_the_kernel_workers_cpu_and_the_kernels_page_reads():
    got = fit.fit_atrest(_doc())
    assert got["basis"] == {"cpu": "cpu_s + kworker_cpu_s", "reads": "server_read_bytes / page size"}
    c = got["costs"]
    assert c["reads"]["value"] == pytest.approx(KREAD, rel=0.05) and c["reads"]["ci"][0] > 0
    assert c["writes"]["value"] == pytest.approx(WRITE, rel=0.2)


def test_a_file_without_the_processes_bytes_counts_the_loop_device_and_without_kworkers_the_server_alone():
    got = fit.fit_atrest(_doc(counters=("device_read_bytes",)))
    assert got["basis"]["reads"] == "device_read_bytes / page size"
    assert got["costs"]["reads"]["value"] == pytest.approx(KREAD, rel=0.05)
    old = fit.fit_atrest(_doc(counters=(), kworkers=False))  # a file from before: the engine's counters, cpu_s
    assert old["basis"] == {"cpu": "cpu_s", "reads": "pages_read"}
    assert old["costs"]["reads"]["value"] == pytest.approx(SERVER_SHARE * KREAD * 1.7 / 1.3, rel=0.1)


def test_the_calibration_says_the_basis_beside_each_at_rest_cost(tmp_path):
    doc = calibration.build("postgres", {"page_size": PAGE, "cipher": None}, {"at_rest": (_doc(), tmp_path / "a.json")})
    assert doc["fits"]["at_rest"]["basis"]["cpu"] == "cpu_s + kworker_cpu_s"
    assert "kernel-worker CPU" in doc["costs"]["reads"]["fitted_from"]
    assert doc["costs"]["reads"]["value_s"] == pytest.approx(KREAD, rel=0.05)


def test_sqlcipher_fits_keep_the_servers_cpu_and_its_own_page_reads():
    doc = _doc()
    doc["engine"] = dict(ENGINE, name="sqlite")
    for r in doc["runs"]:
        r["variant"]["encryption"] = "on" if r["variant"]["encryption"] != "off" else "off"
    assert fit.basis_of(doc) == fit.Basis()


def test_a_result_files_fitted_costs_say_the_basis_too():
    from encbench.analysis import unitcost

    got = unitcost.fitted_costs(_doc(), {}, "mixes.json")
    cost, _ = got["reads"]
    assert cost.value == pytest.approx(KREAD, rel=0.05) and "kernel-worker CPU" in cost.source
