"""encbench.util.units: sizes and counts parsed with units, and formatted back."""

from __future__ import annotations

import pytest

from encbench.errors import BadValueError
from encbench.util.units import MAX_SIZE, MIN_SIZE, fmt_bytes, fmt_count, fmt_seconds, parse_positive_int, parse_size


@pytest.mark.parametrize("text,expected", [
    ("50MB", 50_000_000),
    ("50mb", 50_000_000),
    ("50 MB", 50_000_000),
    (" 50MB ", 50_000_000),
    ("50M", 50_000_000),
    ("512MiB", 512 * 2**20),
    ("1GB", 10**9),
    ("1.5GB", 1_500_000_000),
    ("2GiB", 2 * 2**30),
    ("1000kB", 10**6),
    ("1024KiB", 2**20),
    ("1MB", MIN_SIZE),          # lower bound is inclusive
    ("1TB", MAX_SIZE),          # upper bound is inclusive
    ("5000000", 5_000_000),     # bare number: bytes
    ("5000000B", 5_000_000),
])
def test_parse_size_valid(text, expected):
    value = parse_size(text)
    assert value == expected
    assert isinstance(value, int)


@pytest.mark.parametrize("text", ["abc", "-5MB", "10XB", "MB", "", "1e9", "5 M B", "1,5GB"])
def test_parse_size_not_a_size(text):
    with pytest.raises(BadValueError) as ei:
        parse_size(text)
    assert "is not a size" in str(ei.value)
    assert "50MB" in ei.value.hint
    assert ei.value.exit_code == 4


@pytest.mark.parametrize("text", ["0", "0MB", "999kB", "999999", "1.1TB", "2TB", "1TiB"])
def test_parse_size_out_of_range(text):
    with pytest.raises(BadValueError) as ei:
        parse_size(text)
    assert "out of range" in str(ei.value)
    assert ei.value.hint.startswith("use between")


def test_parse_size_names_the_option():
    with pytest.raises(BadValueError, match=r"^--data-size 'abc'"):
        parse_size("abc", what="--data-size")


@pytest.mark.parametrize("text,expected", [("8.2MB", 8_200_000), ("1.001GB", 1_001_000_000)])
def test_parse_size_decimal_fraction_is_exact(text, expected):
    assert parse_size(text) == expected


# --- parse_positive_int -------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [("1", 1), ("10", 10), (" 7 ", 7), ("10000", 10_000), (5, 5)])
def test_parse_positive_int_valid(text, expected):
    assert parse_positive_int(text, what="--runs") == expected


@pytest.mark.parametrize("text", ["abc", "1.5", "", "ten"])
def test_parse_positive_int_not_a_number(text):
    with pytest.raises(BadValueError, match="is not a whole number") as ei:
        parse_positive_int(text, what="--runs")
    assert str(ei.value).startswith("--runs ")
    assert ei.value.hint == "use 1 to 10000"


@pytest.mark.parametrize("text", ["0", "-3", "10001"])
def test_parse_positive_int_out_of_range(text):
    with pytest.raises(BadValueError, match="out of range"):
        parse_positive_int(text, what="--runs")


def test_parse_positive_int_custom_maximum():
    assert parse_positive_int("50", what="--warmups", maximum=50) == 50
    with pytest.raises(BadValueError) as ei:
        parse_positive_int("51", what="--warmups", maximum=50)
    assert ei.value.hint == "use 1 to 50"


# --- formatting ---------------------------------------------------------------------------

@pytest.mark.parametrize("n,text", [
    (None, "-"), (0, "0 B"), (999, "999 B"), (1500, "1.5 kB"), (5e6, "5 MB"),
    (50_000_000, "50 MB"), (1.23e9, "1.23 GB"), (6_246_400, "6.25 MB"), (-2_000_000, "-2 MB"),
])
def test_fmt_bytes(n, text):
    assert fmt_bytes(n) == text


@pytest.mark.parametrize("s,text", [
    (None, "-"), (2.5, "2.50 s"), (1.0, "1.00 s"), (0.1254, "125.4 ms"), (0.001, "1.0 ms"),
    (0.000446, "446.0 µs"), (0.0, "0.0 µs"),
])
def test_fmt_seconds(s, text):
    assert fmt_seconds(s) == text


@pytest.mark.parametrize("n,text", [
    (None, "-"), (0, "0"), (42, "42"), (9999, "9999"), (12_000, "12k"), (2_500_000, "2.5M"),
])
def test_fmt_count(n, text):
    assert fmt_count(n) == text


@pytest.mark.parametrize("n", [MAX_SIZE, 999_999_999, 999_600])
def test_fmt_bytes_never_uses_exponent_notation(n):
    assert "e+" not in fmt_bytes(n)


def test_fmt_count_never_uses_exponent_notation():
    assert "e+" not in fmt_count(999_999)


def test_fmt_percent_keeps_small_shares():
    from encbench.util.units import fmt_percent

    assert [fmt_percent(x) for x in (41.4, 100, 3.24, 0.264, 0)] == ["41%", "100%", "3.2%", "0.26%", "0%"]
    assert fmt_percent(0.264, "") == "0.26"
