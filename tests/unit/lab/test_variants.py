"""encbench.vocab.variants: --variant filters, the matrix, and the baseline of a contender."""

from __future__ import annotations

import pytest

from encbench.engines.sqlite.engine import VARIANT_KEYS as ALL_KEYS
from encbench.errors import BadValueError, UnknownNameError, UsageError
from encbench.vocab.variants import VariantKey, baseline_of, int_validator, label, matrix, normalize, parse_filters

KEY_NAMES = ["encryption", "cache", "page_size", "kdf_iter", "key", "hmac", "kdf_algorithm"]
OLTP_KEY_NAMES = ["encryption", "page_size", "kdf_iter", "key", "hmac", "kdf_algorithm", "script", "memory",
                  "clients"]
# the at-rest workloads' keys (the oltp workload's script, memory and clients vary only the oltp workload)
VARIANT_KEYS = tuple(k for k in ALL_KEYS if k.for_workload("scan-eq"))

OFF_COLD = {"encryption": "off", "cache": "cold", "page_size": "4096"}
OFF_WARM = {"encryption": "off", "cache": "warm", "page_size": "4096"}
ON_COLD = {"encryption": "on", "cache": "cold", "page_size": "4096", "kdf_iter": "256000", "key": "passphrase"}
ON_WARM = {"encryption": "on", "cache": "warm", "page_size": "4096", "kdf_iter": "256000", "key": "passphrase"}


def test_sqlite_variant_keys_are_the_documented_ones():
    assert [k.name for k in VARIANT_KEYS] == KEY_NAMES
    assert [k.name for k in ALL_KEYS if k.for_workload("oltp")] == OLTP_KEY_NAMES


# --- parse_filters ------------------------------------------------------------------------

def test_parse_filters_empty():
    assert parse_filters([], VARIANT_KEYS) == {}


def test_parse_filters_single_and_comma_lists():
    f = parse_filters(["cache=cold", "page_size=1024,4096"], VARIANT_KEYS)
    assert f == {"cache": ["cold"], "page_size": ["1024", "4096"]}


def test_parse_filters_strips_spaces():
    assert parse_filters([" cache = cold , warm"], VARIANT_KEYS) == {"cache": ["cold", "warm"]}


@pytest.mark.parametrize("spec", ["cache=cold,,warm", " cache = cold , warm,", "cache=,", "placebo=x,",
                                  "cache=cold, ,warm"])
def test_parse_filters_refuses_empty_items(spec):
    """Issue 21 item 7: an empty value between commas was dropped without a word; now a usage error (exit 2)."""
    with pytest.raises(UsageError, match="empty value between commas") as ei:
        parse_filters([spec], KEYS)
    assert ei.value.exit_code == 2 and repr(spec) in str(ei.value)


def test_parse_filters_repeated_key_merges_without_duplicates():
    f = parse_filters(["cache=cold", "cache=warm,cold"], VARIANT_KEYS)
    assert f == {"cache": ["cold", "warm"]}


def test_parse_filters_canonicalizes_integers():
    assert parse_filters(["page_size=01024"], VARIANT_KEYS) == {"page_size": ["1024"]}


def test_parse_filters_unknown_key_lists_valid_keys():
    with pytest.raises(UnknownNameError) as ei:
        parse_filters(["cipher=aes"], VARIANT_KEYS)
    e = ei.value
    assert "unknown variant key 'cipher'" in str(e)
    assert e.exit_code == 3
    for name in KEY_NAMES:
        assert name in e.hint
    assert e.hint == "valid: " + ", ".join(KEY_NAMES)


def test_parse_filters_unknown_value_of_enumerated_key():
    with pytest.raises(UnknownNameError) as ei:
        parse_filters(["encryption=maybe"], VARIANT_KEYS)
    assert "'maybe'" in str(ei.value) and "'encryption'" in str(ei.value)
    assert ei.value.hint == "valid: off, on"


@pytest.mark.parametrize("spec", ["page_size=1000", "page_size=131072", "page_size=256", "page_size=big",
                                  "kdf_iter=0", "kdf_iter=x"])
def test_parse_filters_bad_value(spec):
    with pytest.raises(BadValueError) as ei:
        parse_filters([spec], VARIANT_KEYS)
    assert ei.value.exit_code == 4
    assert ei.value.hint


@pytest.mark.parametrize("spec", ["cache", "=cold", "cache=", "cache=  ", ""])
def test_parse_filters_not_key_value_is_usage_error(spec):
    with pytest.raises(UsageError) as ei:
        parse_filters([spec], VARIANT_KEYS)
    assert ei.value.exit_code == 2
    assert "KEY=VALUE" in str(ei.value)


# --- matrix -------------------------------------------------------------------------------

def test_default_matrix_has_four_variants():
    assert matrix(VARIANT_KEYS, {}, "scan-eq") == [OFF_COLD, OFF_WARM, ON_COLD, ON_WARM]


def test_matrix_drops_encryption_only_keys_when_off():
    for v in matrix(VARIANT_KEYS, {}, "scan-eq"):
        if v["encryption"] == "off":
            assert "kdf_iter" not in v and "key" not in v
        else:
            assert v["kdf_iter"] == "256000" and v["key"] == "passphrase"


def test_matrix_keys_in_declared_order():
    for v in matrix(VARIANT_KEYS, {}, "scan-eq"):
        assert list(v) == [k for k in KEY_NAMES if k in v]


def test_matrix_filters_narrow():
    assert matrix(VARIANT_KEYS, parse_filters(["cache=cold"], VARIANT_KEYS), "scan-eq") == [OFF_COLD, ON_COLD]
    assert matrix(VARIANT_KEYS, parse_filters(["encryption=on", "cache=warm"], VARIANT_KEYS), "scan-eq") == [ON_WARM]


def test_matrix_page_size_widens_to_eight():
    vs = matrix(VARIANT_KEYS, parse_filters(["page_size=1024,4096"], VARIANT_KEYS), "scan-eq")
    assert len(vs) == 8
    assert sorted({v["page_size"] for v in vs}) == ["1024", "4096"]
    assert len({label(v) for v in vs}) == 8  # no repeats


def test_matrix_kdf_iter_values_do_not_multiply_plain_variants():
    vs = matrix(VARIANT_KEYS, parse_filters(["kdf_iter=1000,256000"], VARIANT_KEYS), "scan-eq")
    assert len(vs) == 2 + 4  # plain x {cold, warm}; encrypted x {cold, warm} x 2 kdf
    assert sum(1 for v in vs if v["encryption"] == "off") == 2


def test_matrix_encryption_off_ignores_key_filter():
    vs = matrix(VARIANT_KEYS, parse_filters(["encryption=off", "key=raw"], VARIANT_KEYS), "scan-eq")
    assert vs == [OFF_COLD, OFF_WARM]


def test_matrix_empty_filter_leaves_nothing():
    with pytest.raises(BadValueError, match="nothing to run"):
        matrix(VARIANT_KEYS, {"cache": []}, "scan-eq")  # parse_filters refuses "cache=," (test_parse_filters_refuses_empty_items)


def test_label():
    assert label(OFF_COLD) == "encryption=off,cache=cold,page_size=4096"
    assert label({}) == ""


def test_normalize_drops_keys_that_do_not_apply():
    v = {"key": "raw", "encryption": "off", "cache": "cold", "kdf_iter": "5"}
    assert normalize(v, VARIANT_KEYS) == {"encryption": "off", "cache": "cold"}


# --- baseline_of --------------------------------------------------------------------------

def test_baseline_of_encrypted_variant_is_plain_same_settings():
    assert baseline_of(ON_COLD, "encryption", "off", VARIANT_KEYS) == OFF_COLD
    assert baseline_of(ON_WARM, "encryption", "off", VARIANT_KEYS) == OFF_WARM
    v = dict(ON_COLD, page_size="1024", key="raw", kdf_iter="1000")
    assert baseline_of(v, "encryption", "off", VARIANT_KEYS) == {"encryption": "off", "cache": "cold", "page_size": "1024"}


def test_baseline_of_baseline_or_missing_axis_is_none():
    assert baseline_of(OFF_COLD, "encryption", "off", VARIANT_KEYS) is None
    assert baseline_of({"cache": "cold"}, "encryption", "off", VARIANT_KEYS) is None


def test_baseline_of_other_axis():
    assert baseline_of(OFF_WARM, "cache", "cold", VARIANT_KEYS) == OFF_COLD


# --- VariantKey ---------------------------------------------------------------------------

def test_variant_key_without_allowed_or_validator_accepts_anything():
    k = VariantKey("x", "free", ("a",))
    assert k.check("anything") == "anything"
    assert k.applies({}) is True


def test_int_validator():
    check = int_validator("n", lambda n: n % 2 == 0, "use an even number")
    assert check("0042") == "42"
    with pytest.raises(BadValueError, match="not allowed"):
        check("3")
    with pytest.raises(BadValueError, match="not a whole number") as ei:
        check("x")
    assert ei.value.hint == "use an even number"


# --- placebo twins (A/A inside one run) ---------------------------------------------------------

from encbench.vocab.variants import (
    PLACEBO_KEY,
    flagged,
    judged,
    placebo_note,
    placebo_reference,
    placebo_twin,
    with_placebo,
)  # noqa: E402

KEYS = with_placebo(VARIANT_KEYS)


def test_with_placebo_adds_the_key_last_and_once():
    assert [k.name for k in KEYS] == KEY_NAMES + ["placebo"]
    assert with_placebo(KEYS) == KEYS


def test_placebo_changes_nothing_unless_asked():
    assert matrix(KEYS, {}, "scan-eq") == [OFF_COLD, OFF_WARM, ON_COLD, ON_WARM]


def test_placebo_twins_sit_side_by_side_in_the_matrix():
    vs = matrix(KEYS, parse_filters(["placebo=a,b"], KEYS), "scan-eq")
    assert vs == [dict(v, placebo=p) for v in (OFF_COLD, OFF_WARM, ON_COLD, ON_WARM) for p in ("a", "b")]
    assert len({label(v) for v in vs}) == 8
    assert label(vs[1]) == "encryption=off,cache=cold,page_size=4096,placebo=b"


@pytest.mark.parametrize("spec", ["placebo=a", "placebo=a,a"])
def test_placebo_needs_two_values(spec):
    with pytest.raises(BadValueError, match="two or more values") as ei:
        parse_filters([spec], KEYS)
    assert ei.value.exit_code == 4 and "placebo=a,b" in ei.value.hint


@pytest.mark.parametrize("value", ["a=b", "with space", "x" * 17, "é"])
def test_placebo_values_are_short_names(value):
    with pytest.raises(BadValueError, match="not a short name"):
        PLACEBO_KEY.check(value)


def test_placebo_reference_and_twin():
    vs = matrix(KEYS, parse_filters(["placebo=ref,t1,t2"], KEYS), "scan-eq")
    ref = placebo_reference(vs)
    assert ref == "ref"
    assert placebo_reference(matrix(KEYS, {}, "scan-eq")) is None
    assert placebo_twin(dict(ON_COLD, placebo="t2"), ref) == dict(ON_COLD, placebo="ref")
    assert placebo_twin(dict(ON_COLD, placebo="ref"), ref) is None
    assert placebo_twin(ON_COLD, ref) is None and placebo_twin(dict(ON_COLD, placebo="t1"), None) is None


def test_flagged_and_judged():
    assert flagged({"significant": True}) and not flagged({"significant": False})
    assert flagged({"verdict": "costs", "significant": False}) and flagged({"verdict": "saves"})
    assert not flagged({"verdict": "inconclusive", "significant": True}) and not flagged({"verdict": "no_cost"})
    assert judged({"ratio": 1.0}) and not judged({"ratio": None})
    assert not judged({"ratio": 1.0, "verdict": "too_few_runs"})


def test_placebo_note():
    rows = [{"workload": "w", "operation": "o", "contender": "placebo=b", "metric": m, "ratio": r, "significant": s}
            for m, r, s in (("wall_s", 1.3, True), ("wall_s", 1.01, False), ("cpu_s", 0.9, False),
                            ("ctx_voluntary", 3.0, True))]
    note = placebo_note(rows)
    assert note.startswith("placebo (A/A) check: 1 of 3 comparisons of identical twins")
    assert "largest: w/o placebo=b wall_s +30.0%" in note


# --- placebo twins in the analysis: apart from the real comparisons ---------------------------

def _placebo_doc():
    keys = [{"name": k.name, "applies_when": [list(x) for x in k.applies_when], "workloads": None} for k in KEYS]
    variants = matrix(KEYS, parse_filters(["placebo=a,b", "cache=cold"], KEYS), "scan-eq")
    runs = []
    for r in range(3):
        for v in variants:
            wall = (2.0 if v["encryption"] == "on" else 1.0) * (1 + 0.01 * r)
            runs.append({"workload": "scan-eq", "variant": v, "variant_label": label(v), "warmup": False,
                         "round": r, "operations": [{"operation": "scan", "metrics": {"wall_s": wall, "cpu_s": wall}}]})
    return {"engine": {"name": "sqlite", "axis": "encryption", "axis_baseline": "off", "variant_keys": keys,
                       "variants": variants, "tables": None},
            "runs": runs, "environment": {"os_cache": {}, "cpu": {"logical_cores": 2}}, "workloads": {"scan-eq": {"reads_only": True}},
            "calibration": None, "dataset": {}}


def test_analysis_keeps_placebo_twins_out_of_the_real_comparisons():
    from encbench.analysis import summary as analysis

    out = analysis.analyze(_placebo_doc())
    real = {(c["baseline"], c["contender"]) for c in out["comparisons"]}
    assert real == {("encryption=off,cache=cold,page_size=4096,placebo=a",
                     "encryption=on,cache=cold,page_size=4096,kdf_iter=256000,key=passphrase,placebo=a")}
    twins = {(c["baseline"], c["contender"]) for c in out["placebo_comparisons"]}
    assert twins == {("encryption=off,cache=cold,page_size=4096,placebo=a", "encryption=off,cache=cold,page_size=4096,placebo=b"),
                     ("encryption=on,cache=cold,page_size=4096,kdf_iter=256000,key=passphrase,placebo=a",
                      "encryption=on,cache=cold,page_size=4096,kdf_iter=256000,key=passphrase,placebo=b")}
    assert all(c["placebo"] for c in out["placebo_comparisons"])
    assert all(c["ratio"] == pytest.approx(1.0) for c in out["placebo_comparisons"] if c["metric"] == "wall_s")
    assert any(n.startswith("placebo (A/A) check:") for n in out["notes"])


def test_analysis_without_placebo_has_no_placebo_section():
    from encbench.analysis import summary as analysis

    d = _placebo_doc()
    d["runs"] = [r for r in d["runs"] if r["variant"]["placebo"] == "a"]
    d["engine"]["variants"] = [v for v in d["engine"]["variants"] if v["placebo"] == "a"]
    out = analysis.analyze(d)
    assert "placebo_comparisons" not in out and len(out["comparisons"]) >= 2


def test_a_key_can_default_to_other_values_for_one_workload():
    """oltp varies tls over off,on by default, the transit workloads over the key's own defaults; a filter
    still names the values for every workload."""
    key = VariantKey("tls", "", ("off", "on", "x"), workloads=("storm", "oltp"), workload_defaults=(("oltp", ("off", "on")),))
    assert key.default_for("storm") == ("off", "on", "x") and key.default_for("oltp") == ("off", "on")
    assert matrix([key], {}, "oltp") == [{"tls": "off"}, {"tls": "on"}]
    assert len(matrix([key], {}, "storm")) == 3
    assert matrix([key], {"tls": ["on"]}, "oltp") == [{"tls": "on"}]


def test_a_named_only_key_has_no_default_for_its_workload():
    key = VariantKey("encryption", "", ("off", "on"), workloads=("scan", "oltp"), named_only=("oltp",))
    assert key.default_for("oltp") == () and key.default_for("scan") == ("off", "on")
    assert matrix([key, VariantKey("memory", "", ("100%",))], {}, "oltp") == [{"memory": "100%"}]
    assert matrix([key], {"encryption": ["on"]}, "oltp") == [{"encryption": "on"}]
