"""Issue 24 on the embedded engine: `encbench advise --quick` runs SQLCipher's sweeps (one knob at a time) against
the real engine and ranks each value against its default; --from ranks kept files; the HTML report has the list."""

from __future__ import annotations

import json

import pytest

from integration_helpers import assert_one_line_error


@pytest.fixture(scope="module")
def advised(encbench, tmp_path_factory):
    out = tmp_path_factory.mktemp("advise")
    res = encbench("advise", "--quick", "--size", "2MB", "--warmups", "0", "--data-dir", str(out / "data"),
                   "-o", str(out / "sweeps"), "--json", timeout=900)
    assert res.returncode == 0, str(res)
    return json.loads(res.stdout), out


def test_every_sqlcipher_knob_is_measured_and_ranked_per_cost(advised):
    out, _ = advised
    entries = out["entries"]
    assert {(e["key"], e["value"]) for e in entries} >= {("hmac", "sha256"), ("hmac", "sha1"), ("hmac", "off"),
                                                         ("kdf_iter", "64000"), ("key", "raw"),
                                                         ("kdf_algorithm", "sha256"), ("page_size", "1024")}
    for e in entries:
        assert e["default"] != e["value"] and e["n"] >= 6, e
        assert e["ratio"] is None or (e["ci"][0] <= e["ratio"] <= e["ci"][1]), e
        weaker = e["value"] in ("off", "sha1") and e["key"] == "hmac" or e["key"] == "kdf_iter"
        if e["standing"].startswith("saves") and weaker:
            assert e["standing"] == "saves, gives up protection" and e["gives_up"], e  # never a plain win
        if e["rank"] is None:
            assert not e["standing"].startswith("saves"), e
    ranks = {}
    for e in entries:  # numbered 1, 2, ... within each cost: a connection's time and a scan's CPU are not one scale
        if e["rank"]:
            ranks.setdefault(e["what"], []).append(e["rank"])
    assert all(r == list(range(1, len(r) + 1)) for r in ranks.values()), ranks
    assert len(ranks) == 2
    files = out["files"]
    assert len(files) == 5 and all(f.endswith(".json") for f in files)


def test_from_files_the_text_list_and_the_report(encbench, advised, tmp_path):
    _, where = advised
    files = sorted(str(p) for p in (where / "sweeps").glob("advise-*.json"))
    args = ["advise"] + [x for f in files for x in ("--from", f)]
    res = encbench(*args)
    assert res.returncode == 0, str(res)
    assert res.stdout.startswith("What makes encryption cheaper here:") and "how: each value against" in res.stdout
    assert "opening a connection" in res.stdout and "page HMAC off (default sha512)" in res.stdout
    html = tmp_path / "r.html"
    assert encbench("report", *files, "-o", str(html)).returncode == 0
    assert 'id="advice"' in html.read_text()


def test_bad_input(encbench, tmp_path):
    assert_one_line_error(encbench("advise", "--from", str(tmp_path / "missing.json")), 6)
    assert_one_line_error(encbench("advise", "--from", str(tmp_path / "x.json"), "--quick"), 2)
    assert_one_line_error(encbench("advise", "--engine", "nope"), 3)
    assert_one_line_error(encbench("advise", "--runs", "0"), 4)
