"""Issue 24 on PostgreSQL, the pure parts: what each knob value gives up (a weaker TLS is never a plain win), which
values a server version or a kernel cannot run (one line), the sweeps advise makes, the proofs' rules (a connection
per transaction, the filesystem's options), and the ranking of a knob's values from result documents."""

from __future__ import annotations

import gzip

import pytest

from encbench.analysis import advise, summary as an
from encbench.engines.postgres import atrest, knobs, oltp, pgbench
from encbench.engines.postgres import engine as pg
from encbench.errors import CheckFailedError, UsageError
from encbench.host import encfs
from encbench.host.encfs import fscrypt, gocryptfs


# -- what each value gives up ----------------------------------------------------------------------------------

def test_tls_values_give_up_what_they_weaken():
    assert knobs.tls_gives_up("on") == "" and not knobs.tls_weakens("on")
    assert knobs.tls_weakens("off") and "plaintext" in knobs.tls_gives_up("off")
    v12 = "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384"
    assert knobs.tls_weakens(v12) and "TLS 1.2 instead of 1.3" in knobs.tls_gives_up(v12)
    cbc = knobs.tls_gives_up("TLSv1.2:ECDHE-RSA-AES256-SHA384")
    assert "CBC" in cbc and "forward secrecy" not in cbc
    assert "forward secrecy" in knobs.tls_gives_up("TLSv1.2:AES256-GCM-SHA384")
    assert knobs.tls_gives_up("TLSv1.3:TLS_AES_256_GCM_SHA384") == ""
    chacha = "TLSv1.3:TLS_CHACHA20_POLY1305_SHA256"  # FIPS status is said, not counted as weaker protection
    assert "FIPS" in knobs.tls_gives_up(chacha) and not knobs.tls_weakens(chacha)
    assert knobs.tls_weakens("TLSv1.3:TLS_AES_128_GCM_SHA256")
    knob = {k.key: k for k in knobs.KNOBS}["tls"]  # what analysis/advise reads
    assert knob.gives_up.get("off", "") == knobs.tls_gives_up("off") and "off" in knob.weakens
    assert "on" not in knob.weakens and knob.gives_up.get("on", "") == ""


def test_every_knob_is_a_variant_key_with_its_default_and_a_line_per_listed_value():
    keys = {k.name: k for k in pg.VARIANT_KEYS}
    for knob in knobs.KNOBS:
        assert knob.key in keys, knob.key
        allowed = keys[knob.key].allowed
        if allowed is not None:
            assert knob.default in allowed and set(knob.gives_up) <= set(allowed), knob.key
    for key in ("ecdh_curve", "connection", "gocryptfs_cipher", "fscrypt_policy"):
        assert keys[key].named_only, key  # labels and file names unchanged unless named
    assert {k.key: k.server_side for k in knobs.KNOBS}["ecdh_curve"]


# -- what cannot run here, in one line ---------------------------------------------------------------------------

def test_x25519_needs_postgresql_18():
    why = knobs.curve_unavailable("X25519", 150018, "15.18 (Debian 15.18-0+deb12u1)")
    assert why.startswith("not available in PostgreSQL 15.18:") and "ssl_groups" in why
    assert knobs.curve_unavailable("X25519", 180001, "18.1") is None
    assert knobs.curve_unavailable("secp384r1", 150018, "15.18") is None
    assert knobs.curve_setting(150018) == "ssl_ecdh_curve" and knobs.curve_setting(180000) == "ssl_groups"


def test_kernel_config_says_which_fscrypt_modes_are_built(tmp_path, monkeypatch):
    conf = tmp_path / "config.gz"
    conf.write_bytes(gzip.compress(b"CONFIG_CRYPTO_XTS=y\n# CONFIG_CRYPTO_ADIANTUM is not set\nCONFIG_CRYPTO_ESSIV=m\n"))
    assert fscrypt.kernel_config("CRYPTO_XTS", str(conf)) == "y"
    assert fscrypt.kernel_config("CRYPTO_ADIANTUM", str(conf)) == "n"
    assert fscrypt.kernel_config("CRYPTO_ESSIV", str(conf)) == "m"
    assert fscrypt.kernel_config("CRYPTO_HCTR2", str(conf)) is None
    assert fscrypt.kernel_config("CRYPTO_XTS", str(tmp_path / "missing.gz")) is None
    monkeypatch.setattr(fscrypt, "KERNEL_CONFIG", str(conf))
    encfs.fscrypt_policy_unavailable.cache_clear()
    try:
        why = encfs.unavailable("fscrypt", {"policy": "adiantum"})
        assert why.startswith("not available in kernel ") and "CONFIG_CRYPTO_ADIANTUM is not set" in why
        assert encfs.unavailable("fscrypt", {"policy": "aes-256-xts"}) is None  # the default: nothing to probe
    finally:
        encfs.fscrypt_policy_unavailable.cache_clear()
    assert fscrypt.options_of("adiantum")["contents"] == "Adiantum"
    assert encfs.unavailable("gocryptfs", {"cipher": "rot13"}) == "gocryptfs has no option cipher=rot13"


def test_a_gocryptfs_without_the_flag_says_its_version(monkeypatch):
    import subprocess

    def fake_run(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 0, "", "Usage:\n  -aessiv   AES-SIV\n  -info   Display\n")

    monkeypatch.setattr(gocryptfs.subprocess, "run", fake_run)
    monkeypatch.setattr(gocryptfs, "version", lambda: "2.1")
    gocryptfs.cipher_unavailable.cache_clear()
    try:
        assert gocryptfs.cipher_unavailable("xchacha") == "not available in gocryptfs 2.1 (no -xchacha flag)"
        assert gocryptfs.cipher_unavailable("aessiv") is None and gocryptfs.cipher_unavailable("aes-gcm") is None
    finally:
        gocryptfs.cipher_unavailable.cache_clear()


def test_ecdh_curve_on_dsn_needs_allow_reconfigure():
    engine = pg.PostgresEngine()
    filters = {"ecdh_curve": ["secp384r1"]}
    with pytest.raises(UsageError, match="--allow-reconfigure"):
        engine.plan_keys(pg.VARIANT_KEYS, filters, ["connect"], {"dsn": "postgresql://x@h/db"})
    assert engine.plan_keys(pg.VARIANT_KEYS, filters, ["connect"],
                            {"dsn": "postgresql://x@h/db", "allow_reconfigure": True}) == pg.VARIANT_KEYS


# -- the sweeps ----------------------------------------------------------------------------------------------------

def test_the_sweeps_vary_one_knob_each_and_leave_out_what_cannot_run():
    full = knobs.sweeps(False, curves=("prime256v1", "secp384r1"), dsn=False, gocryptfs=("aes-gcm", "xchacha"),
                        fscrypt=("aes-256-xts",))
    assert [s.knob for s in full] == ["tls", "ecdh_curve", "connection", "gocryptfs_cipher"]
    assert full[0].workloads == ("connect", "roundtrip", "storm") and "clients=1" in full[0].variants
    assert "memory=100%" in full[2].variants and full[3].workloads == ("scan-eq", "oltp")
    quick = knobs.sweeps(True, curves=None, dsn=True, gocryptfs=None, fscrypt=None)
    assert [s.knob for s in quick] == ["tls", "connection"] and all(not s.params for s in quick)
    assert not any(v.startswith("memory=") for v in quick[1].variants)  # a --dsn server's memory is never changed
    for sweep in full:  # every filter names a known key and value of the engine
        from encbench.vocab.variants import parse_filters

        parse_filters(list(sweep.variants), pg.VARIANT_KEYS)


# -- the proofs' rules ----------------------------------------------------------------------------------------------

def test_a_connection_per_transaction_is_proven_by_the_sessions_counted():
    assert oltp.check_connections("per-transaction", 266, 265)["sessions_per_transaction"] > 1
    assert oltp.check_connections("reused", 2, 5213)["sessions_opened"] == 2
    with pytest.raises(CheckFailedError, match="not connection=per-transaction"):
        oltp.check_connections("per-transaction", 2, 5213)
    with pytest.raises(CheckFailedError, match="not connection=reused"):
        oltp.check_connections("reused", 266, 265)


def test_pgbench_opens_a_connection_per_transaction_with_minus_c(tmp_path):
    base = dict(script="tpcb-like", clients=1, seconds=3, vacuum=False, log=True, scratch=tmp_path)
    assert "-C" not in pgbench.oltp_command("pgbench", **base)
    assert "-C" in pgbench.oltp_command("pgbench", **base, new_connections=True)
    out = "number of transactions actually processed: 265\naverage connection time = 9.807 ms\ntps = 88.2 (x)\n"
    assert pgbench.oltp_summary(out, tmp_path)["average_connection_ms"] == 9.807


def test_each_filesystem_option_has_its_own_cluster():
    assert atrest.cluster_key({"encryption": "gocryptfs"}) == "gocryptfs"
    assert atrest.cluster_key({"encryption": "gocryptfs", "gocryptfs_cipher": "aes-gcm"}) == "gocryptfs"
    assert atrest.filesystem_of({"encryption": "gocryptfs", "gocryptfs_cipher": "xchacha"}) == (
        "gocryptfs", {"cipher": "xchacha"})
    assert atrest.cluster_key({"encryption": "fscrypt", "fscrypt_policy": "adiantum"}) == "fscrypt-adiantum"
    assert atrest.cluster_key({"encryption": "off"}) == "off"
    assert atrest.cluster_label("gocryptfs-xchacha", {"encryption": "gocryptfs", "options": {"cipher": "xchacha"}}) \
        == "encryption=gocryptfs,gocryptfs_cipher=xchacha"
    assert atrest.cluster_label("fscrypt", {}) == "encryption=fscrypt"


def test_a_filesystem_running_other_options_fails_the_run(monkeypatch):
    monkeypatch.setattr(encfs, "running_options", lambda kind, place: {
        "cipher": "aes-gcm", "content_encryption": "AES-GCM-256", "read_from": "gocryptfs -info"})
    variant = {"encryption": "gocryptfs", "gocryptfs_cipher": "xchacha"}
    with pytest.raises(CheckFailedError, match="not gocryptfs_cipher=xchacha"):
        atrest.check_filesystem(variant, {"encryption": "gocryptfs"}, {})
    assert atrest.check_filesystem({"encryption": "gocryptfs", "gocryptfs_cipher": "aes-gcm"}, {}, {})["cipher"] \
        == "aes-gcm"


# -- ranked from result documents ----------------------------------------------------------------------------------

def _doc(values: dict[str, float], key: str, base: dict, workload: str, op: str, metric: str) -> dict:
    runs = []
    for value, cost in values.items():
        for i in range(6):
            variant = dict(base, **{key: value})
            runs.append({"workload": workload, "variant": variant, "variant_label": an.label(variant),
                         "warmup": False, "operations": [{"operation": op, "metrics": {"cpu_s": 1.0, "wall_s": 1.0},
                                                          "extra": {metric: cost * (1 + 0.01 * (i % 3 - 1))}}]})
    return {"engine": {"name": "postgres", "variants": []}, "runs": runs}


def test_a_pooler_ranks_as_a_plain_saving_and_tls_off_never_does():
    pooled = _doc({"per-transaction": 8000.0, "reused": 560.0}, "connection",
                  {"memory": "100%", "tls": "on", "clients": "1"}, "oltp", "mix", "cpu_us_per_transaction")
    tls = _doc({"on": 40.0, "off": 30.0}, "tls", {"clients": "1"}, "roundtrip", "select-by-pk", "cpu_us_per_query")
    entries = advise.advise([("pool.json", pooled), ("tls.json", tls)], knobs.KNOBS, {})
    by = {(e["key"], e["value"]): e for e in entries}
    assert by[("connection", "reused")]["standing"] == advise.SAVES and by[("connection", "reused")]["rank"] == 1
    assert by[("tls", "off")]["standing"] == advise.WEAKER_SAVES and "plaintext" in by[("tls", "off")]["gives_up"]
