"""Issue 24: `encbench advise` ranks each knob value against its default; a weaker setting is never a plain win and
an unresolved difference is not ranked."""

from __future__ import annotations

from encbench.analysis import advise, summary as an
from encbench.vocab.knob import Cost, Knob

SCAN = Cost("scan-eq", "cpu_s", scope=(("cache", "cold"),), what="a cold scan")
OPEN = Cost("(open)", "wall_s", operation="connect", what="opening a connection")
KNOBS = (Knob("hmac", "page HMAC", "sha512", (SCAN,), gives_up={"off": "pages not authenticated"},
              weakens=frozenset({"off"})),
         Knob("key", "key form", "passphrase", (OPEN,), gives_up={"raw": "a key from a key manager"}))


def _doc(cpu: dict[str, float], opens: dict[str, float], spread: float = 0.01) -> dict:
    runs = []
    for hmac, c in cpu.items():
        for i in range(6):
            j = 1 + spread * (i % 3 - 1)
            variant = {"encryption": "on", "cache": "cold", "key": "passphrase", "hmac": hmac}
            runs.append({"workload": "scan-eq", "variant": variant, "variant_label": an.label(variant), "warmup": False,
                         "operations": [{"operation": "scan", "metrics": {"cpu_s": c * j, "wall_s": c * j}}],
                         "open": {"wall_s": opens.get("passphrase", 0.2) * j}})
    for key, o in opens.items():
        if key == "passphrase":
            continue
        for i in range(6):
            j = 1 + spread * (i % 3 - 1)
            variant = {"encryption": "on", "cache": "cold", "key": key, "hmac": "sha512"}
            runs.append({"workload": "scan-eq", "variant": variant, "variant_label": an.label(variant), "warmup": False,
                         "operations": [{"operation": "scan", "metrics": {"cpu_s": cpu["sha512"] * j}}],
                         "open": {"wall_s": o * j}})
    return {"runs": runs, "engine": {"name": "sqlite", "axis": "encryption", "axis_baseline": "off",
                                     "variant_keys": [{"name": k, "applies_when": []}
                                                      for k in ("encryption", "cache", "key", "hmac")]}}


def test_ranked_within_each_cost_and_weaker_never_a_plain_win():
    doc = _doc({"sha512": 0.010, "sha256": 0.0066, "off": 0.0035}, {"passphrase": 0.2, "raw": 0.0003})
    out = advise.advise([("f.json", doc)], KNOBS)
    by = {(e["key"], e["value"]): e for e in out}
    assert by[("hmac", "sha256")]["standing"] == advise.SAVES and by[("hmac", "sha256")]["rank"] == 1
    off = by[("hmac", "off")]
    assert off["ratio"] < by[("hmac", "sha256")]["ratio"]  # saves more...
    assert off["standing"] == advise.WEAKER_SAVES and off["rank"] == 2  # ...but weakens: ranked after the plain win
    assert "but gives up: pages not authenticated" in advise.line(off)
    raw = by[("key", "raw")]
    assert raw["what"] == "opening a connection" and raw["rank"] == 1  # ranked in its own cost, not against scans
    assert raw["ratio"] < 0.01


def test_an_unresolved_difference_is_not_ranked():
    doc = _doc({"sha512": 0.010, "sha256": 0.0098}, {"passphrase": 0.2}, spread=0.3)
    (e,) = advise.advise([("f.json", doc)], KNOBS)
    assert e["standing"] == advise.NOT_RESOLVED and e["rank"] is None
    assert "not resolved" in advise.line(e)


def test_no_pair_no_entry_and_a_plain_report():
    doc = _doc({"sha256": 0.006}, {"passphrase": 0.2})  # no default measured beside it
    assert advise.advise([("f.json", doc)], KNOBS) == []
    assert "no knob was measured at two values" in advise.report_lines([], ["f.json"])[0]


def test_one_default_figure_per_cost_and_sweep_file_labelled():
    """issue 30 item 3: the default's figure once per cost and sweep file, with the file named (three files measured
    the default open at 572, 433 and 414 ms: three figures, each said where it comes from, never as one)."""
    one = _doc({"sha512": 0.010, "sha256": 0.0066}, {"passphrase": 0.572, "raw": 0.0003})
    two = _doc({"sha512": 0.010}, {"passphrase": 0.433, "raw": 0.0003})
    for run in two["runs"]:  # the second file sweeps another knob of the same cost (as kdf-iter beside key)
        run["variant"]["kdf"] = {"passphrase": "a", "raw": "b"}[run["variant"].pop("key")]
        run["variant_label"] = an.label(run["variant"])
    kdf = Knob("kdf", "key derivation", "a", (OPEN,), gives_up={"b": ""})
    out = advise.report_lines(advise.advise([("a/advise-one.json", one), ("a/advise-two.json", two)], (*KNOBS, kdf)),
                              ["a/advise-one.json", "a/advise-two.json"])
    opening = out.index("  opening a connection (elapsed):")
    defaults = out[opening + 1]
    assert defaults.startswith("    at the defaults, as each sweep file measured them: 572.0 ms [")
    assert "(advise-one.json, mean of 6 runs); 433.0 ms [" in defaults and defaults.endswith(
        "(advise-two.json, mean of 6 runs)")
    scan = out.index("  a cold scan (CPU):")
    assert out[scan + 1].count("advise-") == 1 and "10.0 ms [" in out[scan + 1]  # one file measured the scan
    assert sum("at the defaults" in x for x in out) == 2  # one line per cost
