"""Issue 24: SQLCipher's page HMAC and key-derivation hash as variant keys, each proven to take effect (read back
from SQLCipher per run) and set beside its own raw cipher reference."""

from __future__ import annotations

import json

from integration_helpers import assert_one_line_error


def test_page_hmac_and_kdf_algorithm_take_effect(encbench, tmp_path):
    out = tmp_path / "hmac.json"
    res = encbench("run", "--workload", "scan-eq", "--size", "2MB", "--runs", "2", "--warmups", "0",
                   "--variant", "cache=cold", "--variant", "hmac=sha512,sha256,off", "--variant", "kdf_algorithm=sha256",
                   "--data-dir", str(tmp_path / "data"), "-o", str(out), timeout=600)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    want = {"sha512": ("HMAC_SHA512", "1"), "sha256": ("HMAC_SHA256", "1"), "off": (None, "0")}
    seen = set()
    for r in doc["runs"]:
        v = r["variant"]
        if v["encryption"] != "on":
            assert "cipher" not in (r.get("session") or {})
            continue
        got = r["session"]["cipher"]  # what SQLCipher says the run's connection runs
        hmac, use = want[v["hmac"]]
        assert got["use_hmac"] == use and (hmac is None or got["hmac"] == hmac), (v, got)
        assert got["kdf_algorithm"] == "PBKDF2_HMAC_SHA256", got
        seen.add(v["hmac"])
    assert seen == set(want)
    raw = doc["calibration"]["raw_cipher"]  # each page HMAC its own reference, HMAC-SHA512's keyed as before
    assert set(raw) == {"4096", "4096/hmac=sha256", "4096/hmac=off"}, raw
    assert "HMAC-SHA256" in raw["4096/hmac=sha256"]["cipher"] and "no HMAC" in raw["4096/hmac=off"]["cipher"]
    names = sorted(name for name in doc["dataset"]["files"] if name.startswith("enc-"))
    assert len(names) == 3 and any("-hoff" in n for n in names) and all("-kdsha256" in n for n in names), names


def test_unknown_hmac_value(encbench, tmp_path):
    line = assert_one_line_error(encbench("run", "--variant", "hmac=md5", "--data-dir", str(tmp_path)), 3)
    assert "sha512" in line and "off" in line
