"""Quantities (resource.Quantity) and durations, as tables (engine/quantity.py)."""
from decimal import Decimal

import pytest

from engine.quantity import US, milli_value, parse_duration, parse_quantity, seconds, value


@pytest.mark.parametrize("text, expected", [
    # ECOSYSTEM.md reference values
    ("100m", Decimal("0.1")),
    ("2Gi", Decimal(2147483648)),
    ("1e3", Decimal(1000)),
    ("0.5Ki", Decimal(512)),
    # numbers as YAML gives them
    (1.5, Decimal("1.5")),
    (2, Decimal(2)),
    (0, Decimal(0)),
    # signs, bare fractions, exponents in either case
    ("+1", Decimal(1)),
    ("-1", Decimal(-1)),
    (".5", Decimal("0.5")),
    ("1.", Decimal(1)),
    ("1E3", Decimal(1000)),
    ("1e-3", Decimal("0.001")),
    ("2E+2", Decimal(200)),
    # every binary suffix
    ("1Ki", Decimal(2**10)), ("1Mi", Decimal(2**20)), ("1Gi", Decimal(2**30)),
    ("1Ti", Decimal(2**40)), ("1Pi", Decimal(2**50)), ("1Ei", Decimal(2**60)),
    # every decimal suffix
    ("5n", Decimal("5e-9")), ("5u", Decimal("5e-6")), ("5m", Decimal("0.005")), ("5", Decimal(5)),
    ("5k", Decimal(5000)), ("5M", Decimal(5 * 10**6)), ("5G", Decimal(5 * 10**9)),
    ("5T", Decimal(5 * 10**12)), ("5P", Decimal(5 * 10**15)), ("5E", Decimal(5 * 10**18)),
    ("1.5Gi", Decimal(3 * 2**29)),
    ("250m", Decimal("0.25")),
])
def test_parse_quantity(text, expected):
    got = parse_quantity(text)
    assert isinstance(got, Decimal)
    assert got == expected


@pytest.mark.parametrize("bad", [
    "abc", "12x", "1.2.3", "", None, True, False, "1Kix", "Ki", "e3", "1e", "1ki", "1 Gi",
    "-", "+", ".", "1.5e3Gi", "0x10", float("nan"), float("inf"), [1], {"cpu": 1},
])
def test_parse_quantity_rejects(bad):
    with pytest.raises(ValueError, match="is not a quantity"):
        parse_quantity(bad)


def test_quantity_error_quotes_the_value_as_the_loader_does():
    with pytest.raises(ValueError) as e:
        parse_quantity("12x")
    assert str(e.value) == '"12x" is not a quantity'


@pytest.mark.parametrize("text, milli, val", [
    ("100m", 100, 1),          # Value() rounds 0.1 up to 1
    ("1.0001", 1001, 2),       # 1000.1 milli rounds up to 1001; 1.0001 rounds up to 2
    ("0.1m", 1, 1),            # 0.1 milli rounds up to 1 milli
    ("1n", 1, 1),
    ("2", 2000, 2),
    ("1.5", 1500, 2),
    ("2Gi", 2147483648000, 2147483648),
    ("0", 0, 0),
])
def test_milli_value_and_value_round_up(text, milli, val):
    q = parse_quantity(text)
    assert milli_value(q) == milli
    assert value(q) == val
    assert isinstance(milli_value(q), int) and isinstance(value(q), int)


@pytest.mark.parametrize("given, us", [
    ("500ms", 500_000),
    ("1m30s", 90 * US),
    (5, 5 * US),
    (0.25, 250_000),
    ("2h", 2 * 3600 * US),
    ("1.5s", 1_500_000),
    ("0", 0),
    (0, 0),
    ("10", 10 * US),           # a bare number string is seconds
    ("1.5", 1_500_000),
    ("1h2m3s", 3723 * US),
    ("1us", 1),
    ("1s500ms", 1_500_000),
    (".5s", 500_000),
])
def test_parse_duration(given, us):
    got = parse_duration(given)
    assert got == us
    assert isinstance(got, int)


@pytest.mark.parametrize("bad", [
    "-1s", "5x", "", "s", True, False, None, -1, -0.5, "1m 30s", "5S", "ms5", "inf", "nan",
    float("inf"), float("nan"), [5], "1.2.3s",
])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(bad)


@pytest.mark.parametrize("bad", ["1ns", 1e-7, "0.0000001"])
def test_parse_duration_rejects_sub_microsecond(bad):
    with pytest.raises(ValueError, match="finer than a microsecond"):
        parse_duration(bad)


def test_seconds_converts_virtual_time_back():
    assert seconds(parse_duration("1m30s")) == 90.0
    assert seconds(500_000) == 0.5
