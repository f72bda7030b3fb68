"""The per-page costs: a cold read's added CPU over the pages decrypted or read (decrypt), a warm rebuild's over
the pages encrypted or written (encrypt, an upper bound); the kernel workers' share where fscrypt decrypts, and
the raw cipher's speed beside them."""

from __future__ import annotations

from . import stats
from .groups import variants_by_label
from ..engines import engine_named
from ..host import rawcipher
from ..util.units import fmt_seconds


def derived(doc: dict, groups, comps: list[dict]) -> list[dict]:
    """The per-page decrypt CPU cost from cold encrypted minus cold plain reads."""
    out = []
    raw = (doc.get("calibration") or {}).get("raw_cipher", {})
    variants = variants_by_label(doc)
    engine = engine_named(doc["engine"]["name"])
    for c in comps:
        wl_meta = doc.get("workloads", {}).get(c["workload"], {})
        contender = variants[c["contender"]]
        if c["metric"] != "cpu_s" or not wl_meta.get("reads_only") or contender.get("cache") != "cold":
            continue
        if _uncounted(engine, contender, doc):  # its decryption is in no measured process: no per-page figure
            continue
        cont = groups[(c["workload"], c["operation"], c["contender"])]
        base = groups[(c["workload"], c["operation"], c["baseline"])]
        kernel = _in_kernel_workers(engine, contender)
        if kernel:  # the server's CPU and the kernel workers' (where fscrypt decrypts), run by run, both sides
            base_cpu, cont_cpu = (_with_kworkers(doc, c["workload"], c["operation"], c[side])
                                  for side in ("baseline", "contender"))
        else:
            base_cpu, cont_cpu = base["cpu_s"], cont["cpu_s"]
        # the pages the engine says it decrypted when it counts them (InnoDB), else the pages read
        basis = "pages_decrypted" if sum(cont.get("pages_decrypted", [])) > 0 else "pages_read"
        pages = stats.summarize(cont.get(basis, []))
        if pages is None or pages.mean <= 0:
            continue
        diff = stats.difference_ci(base_cpu, cont_cpu)
        if diff.value is None:
            continue
        page_size = int(contender.get("page_size") or (doc.get("dataset") or {}).get("page_size") or 4096)
        per_page = diff.value / pages.mean
        ci = [x / pages.mean for x in diff.ci] if diff.ci else None
        entry = {
            "workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
            "contender": c["contender"], "page_size": page_size, "pages_read": pages.mean, "pages_basis": basis,
            "added_cpu_s": diff.value, "added_cpu_ci": list(diff.ci) if diff.ci else None,
            "per_page_cpu_s": per_page, "per_page_cpu_ci": ci,
            "decrypt_mb_per_s_per_core": page_size / per_page / 1e6 if per_page > 0 else None,
            "decrypt_mb_per_s_ci": ([page_size / ci[1] / 1e6, page_size / ci[0] / 1e6]
                                    if ci and ci[0] > 0 else None),
            "method": f"(mean CPU cold encrypted - mean CPU cold plain) / mean {basis.replace('_', ' ')}, "
                      "Welch t 95% CI",
            "kind": "read",
        }
        if kernel:
            entry.update(_kernel_worker_part(doc, c, base, cont, pages.mean, page_size))
        ref = raw.get(engine.raw_cipher_key(contender, page_size) if engine else str(page_size)) \
            if _raw_reference_applies(engine, contender) else None
        if ref and entry["decrypt_mb_per_s_per_core"]:
            rawcipher.set_beside(entry, ref)  # a contradiction (faster than the raw cipher) is flagged, not printed
        out.append(entry)
    return out + write_costs(doc, groups, comps)


KWORKER_METHOD = ("(mean server + kernel-worker CPU cold encrypted - the same cold plain) / mean pages read, "
                  "Welch t 95% CI; kernel-worker CPU: every kworker thread of the machine over the operation "
                  "(the kworkers probe), so the plain baseline's share (its I/O, other work) cancels out")


def _in_kernel_workers(engine, variant: dict) -> bool:
    """Does this variant decrypt in kernel worker threads (fscrypt), whose CPU the kworkers probe measures?"""
    return bool(engine) and variant.get("encryption") in engine.kernel_worker_crypto


def _with_kworkers(doc: dict, workload: str, operation: str, variant_label: str) -> list[float] | None:
    """cpu_s + kworker_cpu_s of each measured run of this operation and variant; None when a run lacks either
    (a file from before the kworkers probe, or --probe without it)."""
    out = []
    for run in doc["runs"]:
        if run.get("warmup") or run["workload"] != workload or run["variant_label"] != variant_label:
            continue
        for op in run.get("operations", []):
            if op["operation"] != operation:
                continue
            m = op.get("metrics", {})
            if not isinstance(m.get("cpu_s"), (int, float)) or not isinstance(m.get("kworker_cpu_s"), (int, float)):
                return None
            out.append(float(m["cpu_s"]) + float(m["kworker_cpu_s"]))
    return out or None


def kernel_cipher(doc: dict, value: str) -> dict:
    """The kernel driver behind an encryption value's filesystem, as the dataset recorded it (PostgreSQL's
    `clusters`, MariaDB's `filesystems`: cipher_info's `contents`), with cpu_has_aes; {} when not recorded."""
    data = doc.get("dataset") or {}
    for key in ("clusters", "filesystems"):
        cipher = ((data.get(key) or {}).get(value) or {}).get("cipher") or {}
        if cipher.get("contents"):
            return {**cipher["contents"], "cpu_has_aes": cipher.get("cpu_has_aes")}
    return {}


def _kernel_worker_part(doc: dict, c: dict, base: dict, cont: dict, pages: float, page_size: int) -> dict:
    """The kernel-worker keys of a per-page entry: the CPU basis, the workers lost, the host-wide figure, the driver."""
    out = {"cpu_basis": "cpu_s + kworker_cpu_s", "method": KWORKER_METHOD,
           "kworkers_exited": int(sum(base.get("kworkers_exited", [])) + sum(cont.get("kworkers_exited", []))),
           "kworker_added_cpu_s": None, "host_added_cpu_s": None, "host_added_cpu_ci": None,
           "host_decrypt_mb_per_s_per_core": None}
    kw = stats.difference_ci(base.get("kworker_cpu_s", []), cont.get("kworker_cpu_s", []))
    out["kworker_added_cpu_s"] = kw.value
    host = stats.difference_ci(base.get("host_cpu_s", []), cont.get("host_cpu_s", []))
    if host.value is not None:  # the broader figure: every core's non-idle CPU, whatever ran
        out["host_added_cpu_s"], out["host_added_cpu_ci"] = host.value, list(host.ci) if host.ci else None
        if host.value > 0:
            out["host_decrypt_mb_per_s_per_core"] = page_size / (host.value / pages) / 1e6
    driver = kernel_cipher(doc, variants_by_label(doc)[c["contender"]].get("encryption", ""))
    if driver.get("driver"):
        out["kernel_driver"] = {k: driver.get(k) for k in ("name", "driver", "accelerated", "implementation",
                                                            "cpu_has_aes")}
    return out


def kernel_cipher_notes(derived_entries: list[dict], doc: dict) -> list[str]:
    """Issue 15 item 3's sentence per cold read decrypted in kernel workers: the speed per core, the driver
    the kernel runs, the userspace speed of the same mode on this CPU; or why no speed is claimed."""
    out = []
    for d in derived_entries:
        if d.get("kind") != "read" or d.get("cpu_basis") != "cpu_s + kworker_cpu_s":
            continue
        value = variants_by_label(doc)[d["contender"]].get("encryption", "")
        where = f"{d['workload']}/{d['operation']} {d['contender']}"
        k = d.get("kernel_driver") or {}
        through = f" through {k['driver']}" if k.get("driver") else ""
        if k.get("accelerated") is False:
            through += " (this kernel has no AES-NI driver" + (
                "; the CPU has AES instructions)" if k.get("cpu_has_aes") else ")")
        elif k.get("accelerated"):
            through += f" ({k.get('implementation')})"
        speed = d.get("decrypt_mb_per_s_per_core")
        if not speed:
            out.append(f"{where}: no decrypt speed claimed for {value}: the added server + kernel-worker CPU "
                       f"({fmt_seconds(d['added_cpu_s'])}) is not above zero; use a larger --size")
            continue
        ci = d.get("decrypt_mb_per_s_ci")
        text = (f"{where}: {value} decrypts at {speed:,.0f} MB/s per core"
                + (f" [{ci[0]:,.0f}, {ci[1]:,.0f}]" if ci else "") + through)
        raw = d.get("raw_cipher_mb_per_s_per_core")
        if raw:  # the calibration's cipher: "AES-256-XTS per 8192-byte page (fscrypt's contents mode), userspace"
            ref = ((doc.get("calibration") or {}).get("raw_cipher") or {}).get(str(d["page_size"])) or {}
            text += (f"; userspace {str(ref.get('cipher', 'raw cipher')).split(' per ')[0]} on this CPU: "
                     f"{raw / 1000:,.1f} GB/s per core")
        if d.get("raw_cipher_flag"):  # faster than the userspace cipher: a figure of noise (rawcipher.set_beside)
            text += f"; {d['raw_cipher_flag']}"
        if d.get("kworkers_exited"):
            text += f" ({d['kworkers_exited']} kernel workers exited mid-operation: their CPU is not counted)"
        out.append(text)
    return out


def _uncounted(engine, variant: dict, doc: dict | None = None) -> str | None:
    """Why this variant's crypto CPU is in no measured process, else None: an engine's uncounted_crypto, or a
    variant that decrypts in kernel workers in a file whose runs have no kworker_cpu_s."""
    why = (engine.uncounted_crypto if engine else {}).get(variant.get("encryption", ""))
    if why or doc is None or not _in_kernel_workers(engine, variant):
        return why
    if all("kworker_cpu_s" in op.get("metrics", {}) for r in doc["runs"] if not r.get("warmup")
           and r["variant"].get("encryption") in (variant.get("encryption"), doc["engine"]["axis_baseline"])
           and r["variant"].get("cache") == "cold" for op in r.get("operations", [])):
        return None
    return (f"{variant.get('encryption')} decrypts reads in kernel worker threads and these runs have no "
            "kworker_cpu_s (a file from before the kworkers probe, or --probe without it): the CPU ratio leaves "
            "the decryption out, read the elapsed ratio")


def _raw_reference_applies(engine, variant: dict) -> bool:
    """Is the calibration's raw cipher the one this variant runs (the engine's own encryption, not a filesystem's)?
    Files of an engine this version does not know: as before, when the variant encrypts."""
    values = engine.raw_cipher_values if engine else ("on",)
    return variant.get("encryption") in values


def write_costs(doc: dict, groups, comps: list[dict]) -> list[dict]:
    """The write side: a warm rebuild reads from the cache and writes (encrypts) every page, so its added CPU
    over the pages encrypted (InnoDB's counter) or written is a per-page encrypt cost."""
    out = []
    variants = variants_by_label(doc)
    for c in comps:
        wl_meta = doc.get("workloads", {}).get(c["workload"], {})
        contender = variants[c["contender"]]
        rewrites = wl_meta.get("rewrites", c["workload"] == "rebuild")  # files before the flag: rebuild
        if c["metric"] != "cpu_s" or not rewrites or contender.get("cache") != "warm":
            continue
        cont = groups[(c["workload"], c["operation"], c["contender"])]
        base = groups[(c["workload"], c["operation"], c["baseline"])]
        basis = "pages_encrypted" if sum(cont.get("pages_encrypted", [])) > 0 else "pages_written"
        pages = stats.summarize(cont.get(basis, []))
        diff = stats.difference_ci(base["cpu_s"], cont["cpu_s"])
        if pages is None or pages.mean <= 0 or diff.value is None:
            continue
        page_size = int(contender.get("page_size") or (doc.get("dataset") or {}).get("page_size") or 4096)
        per_page = diff.value / pages.mean
        ci = [x / pages.mean for x in diff.ci] if diff.ci else None
        out.append({
            "workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
            "contender": c["contender"], "page_size": page_size, "pages_read": pages.mean, "pages_basis": basis,
            "added_cpu_s": diff.value, "added_cpu_ci": list(diff.ci) if diff.ci else None,
            "per_page_cpu_s": per_page, "per_page_cpu_ci": ci,
            "decrypt_mb_per_s_per_core": None, "decrypt_mb_per_s_ci": None, "kind": "write",
            "method": f"(mean CPU warm encrypted - mean CPU warm plain) / mean {basis.replace('_', ' ')}, "
                      "Welch t 95% CI: a per-page encrypt cost (an upper bound: other write work is in it too)",
        })
    return out
