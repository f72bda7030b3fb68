"""Issue 23: where the instructions go (analysis/instrattr.py), on fabricated metered runs shaped like the ones
measured on the lab machine: a SQLCipher cold scan adds ~109k instructions per 4 KB page, 80% of them in
sha512_block_data_order_avx2 (the page HMAC), 6% in aesni_cbc_encrypt; PostgreSQL TLS suites whose SHA-256 runs
other code natively (SHA-NI) than under valgrind."""

from __future__ import annotations

from rich.console import Console

from encbench.analysis import headline, instrattr, stats, summary as an
from encbench.report import html, render

SO = "_sqlite3.cpython-311-x86_64-linux-gnu.so"
PAGES = 748


def _scan_profile(encrypted: bool, jitter: int) -> tuple[float, list[list]]:
    funcs = [[SO, "sqlite3VdbeExec", 4_700_000 + jitter], [SO, "sqlite3BtreeNext", 1_500_000],
             [SO, "(other)", 3_000_000], ["libc.so.6", "__memcpy_avx_unaligned_erms", 2_000_000]]
    if encrypted:
        funcs += [[SO, "sha512_block_data_order_avx2", 64_700_000], [SO, "aesni_cbc_encrypt", 4_470_000],
                  [SO, "OPENSSL_cleanse", 951_000], [SO, "sqlcipher_page_cipher", 836_000],
                  [SO, "sqlcipher_page_hmac", 368_000], ["libc.so.6", "malloc", 368_000],
                  [SO, "sqlite3PagerGet", 9_200_000]]
    return float(sum(n for _, _, n in funcs)), funcs


def _sqlite_doc(runs: int = 6) -> dict:
    out = []
    for enc in ("off", "on"):
        variant = {"encryption": enc, "cache": "cold", "page_size": "4096",
                   **({"kdf_iter": "256000", "key": "passphrase"} if enc == "on" else {})}
        vl = ",".join(f"{k}={v}" for k, v in variant.items())
        for i in range(runs):
            total, funcs = _scan_profile(enc == "on", 30 * i)
            open_funcs = ([[SO, "sha512_block_data_order_avx2", 1_468_000_000], [SO, "EVP_MD_CTX_copy_ex", 49_000_000],
                           [SO, "HMAC_Final", 11_800_000]] if enc == "on" else []) + [[SO, "(other)", 16_300_000 + i]]
            out.append({"workload": "scan-like", "variant": variant, "variant_label": vl, "warmup": False,
                        "open": {"wall_s": 0.3, "instructions": float(sum(n for _, _, n in open_funcs))},
                        "open_profile": {"functions": open_funcs},
                        "operations": [{"operation": "scan",
                                        "metrics": {"wall_s": 1.0 + 0.1 * i, "cpu_s": 0.9, "instructions": total,
                                                    "pages_read": PAGES + (14 if enc == "on" else 0)},
                                        "extra": {instrattr.PROFILE_KEY: {"functions": funcs}}}]})
    return {"runs": out, "environment": {"cpu": {"logical_cores": 2, "model": "test", "flags": {}}, "kernel": "x"},
            "engine": {"name": "sqlite", "axis": "encryption", "axis_baseline": "off",
                       "variants": [r["variant"] for r in out[::runs]],
                       "variant_keys": [{"name": k, "applies_when": []} for k in ("encryption", "cache", "page_size")]
                       + [{"name": k, "applies_when": [["encryption", "on"]]} for k in ("kdf_iter", "key")]},
            "workloads": {"scan-like": {"reads_only": True, "fixed_duration": False,
                                        "verdict_metrics": ["instructions"], "params": {}}},
            "calibration": {"raw_cipher_instructions": {"4096": {"per_page": 102_857.0, "cipher": "AES-256-CBC"}}},
            "meter": {"kind": "instructions", "tool": "callgrind", "valgrind": "3.19.0",
                      "host_cpu_features": ["aes", "avx2", "sha_ni", "avx512f"],
                      "simulated_cpu_features": ["aes", "avx2"], "missing_cpu_features": ["sha_ni", "avx512f"],
                      "code_paths": [{"family": "AES-CBC", "valgrind": ["aesni_cbc_encrypt"],
                                      "native": ["aesni_cbc_encrypt"], "differs": False},
                                     {"family": "SHA-512", "valgrind": ["sha512_block_data_order_avx2"],
                                      "native": ["sha512_block_data_order_avx2"], "differs": False}]},
            "config": {"command": None, "size_bytes": 0, "meter": "instructions"}, "encbench_version": "test",
            "status": "complete", "schema_version": 1, "dataset": {"rows": 1, "seed": 1}}


def test_functions_are_put_in_groups():
    g = instrattr.group_of
    assert g(SO, "sha512_block_data_order_avx2", "sqlite") == "SHA-512"
    assert g(SO, "aesni_cbc_encrypt", "sqlite") == "AES-CBC"
    assert g(SO, "sqlcipher_page_hmac", "sqlite") == "SQLCipher page codec"  # the engine's own, before the families
    assert g(SO, "sqlite3PagerGet", "sqlite") == "SQLite pager and B-tree"
    assert g(SO, "OPENSSL_cleanse", "sqlite") == "crypto library (other)"  # OpenSSL linked into the engine's object
    assert g(SO, "sqlite3VdbeExec", "sqlite") == "SQLite (other)"  # the engine's catch-all, after the crypto library
    assert g(SO, "(other)", "sqlite") == "SQLite (other)"  # an object's small functions: its library's group
    assert g("libc.so.6", "malloc", "sqlite") == "memory allocation"
    assert g("libc.so.6", "__memcpy_avx_unaligned_erms", "sqlite") == "memory copy and compare"
    assert g("libc.so.6", "(other)", "sqlite") == "C library"
    assert g("libcrypto.so.3", "0x000000000029fe80", "postgres") == "crypto library (stripped: functions by address)"
    named = {"libcrypto.so.3": {"0x000000000029fe80": "SHA-512"}}  # host/cpugap named it by the probe that ran it
    assert g("libcrypto.so.3", "0x000000000029fe80", "postgres", named) == "SHA-512"
    assert g("libssl.so.3", "0x0000000000052db0", "postgres") == "TLS library"
    assert g("postgres", "secure_write", "postgres") == "PostgreSQL TLS and wire code"
    assert g("mariadbd", "vio_ssl_write", "mariadb") == "MariaDB network and TLS code"
    assert g("???", "0x0000000004c61d08", "postgres") == instrattr.OTHER


def test_the_added_instructions_of_an_encrypted_scan_by_group():
    a = an.analyze(_sqlite_doc())
    field = a.instructions
    (e,) = [x for x in field["attribution"] if x["workload"] == "scan-like"]
    assert e["contender"].startswith("encryption=on") and e["runs"] == [6, 6]
    groups = {g["group"]: g for g in e["groups"]}
    assert abs(e["added_instructions"] - 80_893_000) < 1
    lead = e["groups"][0]
    assert lead["group"] == "SHA-512" and lead["role"] == "the page HMAC" and round(lead["share"], 2) == 0.80
    assert lead["functions"][0][1] == "sha512_block_data_order_avx2"
    assert groups["AES-CBC"]["role"] == "the page cipher"
    assert "SQLCipher page codec" in groups and "SQLite pager and B-tree" in groups
    assert instrattr.lead_sentence(e) == "80% of the added instructions are the page HMAC (SHA-512)"
    # the open's SHA-512 is the key derivation, not the page HMAC
    (o,) = [x for x in field["attribution"] if x["workload"] == "(open)"]
    assert o["groups"][0]["role"] == "the PBKDF2 key derivation"


def test_the_added_instructions_per_page_beside_the_raw_cipher():
    a = an.analyze(_sqlite_doc())
    (p,) = a.instructions["per_page"]
    assert p["kind"] == "read" and p["page_size"] == 4096
    assert abs(p["per_page"] - 80_893_000 / (PAGES + 14)) < 1e-6
    assert p["per_page_ci"] is not None and p["per_page_ci"][0] <= p["per_page"] <= p["per_page_ci"][1]
    assert p["raw_cipher_per_page"] == 102_857.0 and round(p["times_raw"], 2) == round(p["per_page"] / 102_857, 2)
    assert a.derived == []  # under valgrind no per-page figure in time is derived


def test_verdicts_rest_on_instructions_and_the_words_say_so():
    doc = _sqlite_doc()
    a = an.analyze(doc)
    scan = [c for c in a.comparisons if c["workload"] == "scan-like"]
    assert [c["metric"] for c in an.basis_of(scan)] == ["instructions"]
    opened = [c for c in a.comparisons if c["workload"] == "(open)"]
    assert [c["metric"] for c in an.basis_of(opened)] == ["instructions"]  # the open too, not its time
    (c,) = an.basis_of(scan)
    assert c["verdict"] == stats.COSTS and "instructions" in c["verdict_text"]
    (line,) = [x for x in a.headline if x["label"] == "cold reads"]
    assert line["metric"] == "instructions", line
    # the short line: the verdict first, the added count (an absolute unit, with its bound: the runs repeat within 0.1%), never "+722%"
    assert line["text"].startswith("cold reads: costs +80.9M instructions [+80.7M, +81.1M]"), line["text"]
    # the whole sentence (show --detail, --json, HTML) names where they went
    assert "80% of the added instructions are the page HMAC (SHA-512)" in line["detail"], line["detail"]
    assert "instructions added per 4 KB page read" in line["detail"] and "the raw cipher" in line["detail"]
    for text in (line["text"], line["detail"]):
        assert " s " not in text and "µs" not in text  # no time under valgrind
    (opening,) = [x for x in a.headline if x["label"] == "opening a connection"]
    assert "per connection (trimmed geometric mean)" not in opening["detail"] and "PBKDF2" in opening["detail"], opening["detail"]
    assert any("every time and CPU time in this file is valgrind's" in n for n in a.notes)


def test_the_report_shows_counts_attribution_and_the_cpu_model_statement():
    doc = _sqlite_doc()
    a = an.analyze(doc)
    console = Console(record=True, width=200)
    render.render_text(doc, a, console)
    text = console.export_text()
    assert "mean instructions" in text and "Δ instructions" in text
    assert "Where the instructions go" in text and "sha512_block_data_order_avx2" in text
    assert "CPU-model gap: valgrind's simulated CPU lacks sha_ni, avx512f" in text
    assert "the same code runs natively for AES-CBC, SHA-512" in text
    md = render.render_markdown(doc, a)
    assert "## Where the instructions go" in md
    page = html.render([(__import__("pathlib").Path("x.json"), doc)])
    assert "Where the instructions go" in page and "mean instructions" in page  # the table's counts too
    console = Console(record=True, width=200)
    render.render_text(doc, a, console, detail=True)
    assert "Δ instructions [95% CI]: +" in console.export_text()


def _tls_doc(code_paths: list[dict]) -> dict:
    """Three TLS suites of a PostgreSQL storm, the system libcrypto stripped (functions by address)."""
    cost = {"off": 0, "aes": 30_000_000, "sha": 70_000_000, "chacha": 40_000_000}
    fn = {"aes": "0x0000000000241c80", "sha": "0x000000000029ad80", "chacha": "0x0000000000135b40"}
    runs = []
    for tls in cost:
        for i in range(6):
            funcs = [["postgres", "(other)", 150_000_000 + 10 * i]]
            if tls != "off":
                funcs.append(["libcrypto.so.3", fn[tls], cost[tls]])
            runs.append({"workload": "storm", "variant": {"tls": tls}, "variant_label": f"tls={tls}", "warmup": False,
                         "operations": [{"operation": "messages",
                                         "metrics": {"instructions": float(sum(n for _, _, n in funcs)), "wall_s": 1.0},
                                         "extra": {"messages": 20000, instrattr.PROFILE_KEY: {"functions": funcs}}}]})
    return {"runs": runs, "environment": {"cpu": {"logical_cores": 2, "model": "t", "flags": {}}, "kernel": "x"},
            "engine": {"name": "postgres", "axis": "tls", "axis_baseline": "off",
                       "variants": [{"tls": t} for t in cost], "variant_keys": [{"name": "tls", "applies_when": []}]},
            "workloads": {"storm": {"verdict_metrics": ["instructions"], "fixed_duration": False, "params": {}}},
            "meter": {"kind": "instructions", "missing_cpu_features": ["sha_ni"], "simulated_cpu_features": ["aes"],
                      "host_cpu_features": ["aes", "sha_ni"], "code_paths": code_paths,
                      "function_families": {"libcrypto.so.3": {"0x0000000000241c80": "AES-GCM",
                                                               "0x000000000029ad80": "SHA-256",
                                                               "0x0000000000135b40": "ChaCha20-Poly1305"}}},
            "config": {"command": None, "size_bytes": 0}, "encbench_version": "t", "status": "complete",
            "schema_version": 1}


SHA_DIFFERS = {"family": "SHA-256", "valgrind": ["0x000000000029ad80"], "native": ["0x000000000029c51a"],
               "differs": True, "native_mb_per_s": 1748.0, "held_mb_per_s": 527.0, "missing": ["sha_ni"]}


def test_a_family_that_runs_other_code_natively_is_said_everywhere_and_not_ranked():
    a = an.analyze(_tls_doc([SHA_DIFFERS, {"family": "AES-GCM", "differs": False}]))
    by = {e["contender"]: e for e in a.instructions["attribution"]}
    sha = by["tls=sha"]["groups"][0]
    assert sha["group"] == "SHA-256" and "other code natively" in sha["cpu_gap"] and "3.32x" in sha["cpu_gap"]
    assert "cpu_gap" not in by["tls=aes"]["groups"][0]
    assert "(natively other code)" in "\n".join(instrattr.lines(a.instructions))
    (line,) = [x for x in a.headline if x["label"].startswith("TLS storm")]
    assert "not ranked by instructions: SHA-256 runs other code natively" in line["detail"], line["detail"]
    assert "cheapest" not in line["text"]  # the short line ranks nothing either
    assert "cheapest" not in line["text"] and "dearest" not in line["text"], line["text"]
    gap = a.instructions["cpu_gap"]["text"]
    assert "takes other code natively for SHA-256" in gap and "same code runs natively for AES-GCM" in gap


def test_without_a_gap_the_suites_are_ranked():
    a = an.analyze(_tls_doc([{"family": "SHA-256", "differs": False}]))
    (line,) = [x for x in a.headline if x["label"].startswith("TLS storm")]
    assert "cheapest" in line["detail"] and "not ranked" not in line["detail"], line["detail"]


def test_a_time_file_has_no_instructions_field():
    doc = _sqlite_doc()
    doc.pop("meter")
    doc["config"].pop("meter")
    assert an.analyze(doc).instructions is None
    assert "instructions" not in an.analyze(doc).to_dict()
    assert headline.build(an.analyze(doc)) is not None
