"""The one number module: every unit, rounding, signs, unknown, NaN, infinities, huge and tiny values."""

from __future__ import annotations

import math

import pytest

from cobalt_lib import _numbers as n

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("fn", "value", "text"), [
    # scores: three decimals
    (n.score, 0.8571428, "0.857"), (n.score, 1, "1.000"), (n.score, 0.0, "0.000"), (n.score, -0.0004, "0.000"),
    (n.score, -0.25, "-0.250"), (n.score, 0.9995, "1.000"), (n.score, None, "–"), (n.score, NAN, "NaN"),
    (n.score, INF, "∞"), (n.score, -INF, "-∞"), (n.score, 12345.6789, "12,345.679"),
    # deltas: always signed, never -0.000
    (n.delta, 0.143, "+0.143"), (n.delta, -0.02, "-0.020"), (n.delta, 0.0, "+0.000"), (n.delta, -1e-9, "+0.000"),
    (n.delta, None, "–"), (n.delta, NAN, "NaN"),
    # percentages: one decimal, no trailing .0, tiny non-zero never 0%
    (n.percent, 0.6666666666666666, "66.7%"), (n.percent, 1.0, "100%"), (n.percent, 0, "0%"),
    (n.percent, 0.857, "85.7%"),
    (n.percent, 0.0004, "<0.1%"), (n.percent, -0.0004, "-<0.1%"), (n.percent, -0.125, "-12.5%"),
    (n.percent, 12.5, "1,250%"),
    (n.percent, None, "–"), (n.percent, NAN, "NaN"), (n.percent, INF, "∞"),
    # durations (ms): units hug the number, three significant digits below 10 ms, no exponent
    (n.duration, 0.0, "0ms"), (n.duration, 3.47e-05, "0.0000347ms"), (n.duration, 0.00318, "0.00318ms"),
    (n.duration, 0.042, "0.042ms"), (n.duration, 5.0, "5ms"), (n.duration, 3.18, "3.18ms"),
    (n.duration, 420.4, "420ms"),
    (n.duration, 999.6, "1s"), (n.duration, 59_999, "1m 00s"), (n.duration, 4240.0, "4.24s"),
    (n.duration, 2500.0, "2.5s"), (n.duration, 30000, "30s"),
    (n.duration, -2500.0, "-2.5s"), (n.duration, 125_000, "2m 05s"), (n.duration, 3_725_000, "1h 02m"),
    (n.duration, 400 * 3_600_000, "400h 00m"), (n.duration, -0.0, "0ms"), (n.duration, None, "–"),
    (n.duration, NAN, "NaN"),
    (n.duration, INF, "∞"),
    (n.seconds, 30, "30s"), (n.seconds, 0.25, "250ms"), (n.seconds, 2.5, "2.5s"), (n.seconds, None, "–"),
    # money: significant digits below a cent, never $0.0000 nor 6.95e-06
    (n.money, 0.0, "$0"), (n.money, 6.95e-06, "$0.00000695"), (n.money, 2.7e-05, "$0.0000270"),
    (n.money, 0.00123, "$0.00123"),
    (n.money, 0.5, "$0.5000"), (n.money, 0.0123, "$0.0123"), (n.money, 12.3456, "$12.35"),
    (n.money, 12345.678, "$12,345.68"),
    (n.money, -0.003, "-$0.00300"), (n.money, 1e-12, "$0.00000000000100"), (n.money, None, "–"),
    (n.money, NAN, "NaN"),
    (n.money, INF, "∞"),
    # tokens and counts
    (n.integer, 1234567, "1,234,567"), (n.integer, 0, "0"), (n.integer, 12.6, "13"), (n.integer, None, "–"),
    # any other measure: three significant digits, one decimal at least, integers whole
    (n.number, 1234, "1,234"), (n.number, 12.5, "12.5"), (n.number, 0.0121, "0.0121"), (n.number, 1234.56, "1,234.6"),
    (n.number, 1e-9, "0.00000000100"), (n.number, 1e20, "100,000,000,000,000,000,000.0"), (n.number, -0.0, "0.000"),
    (n.number, -3.14159, "-3.14"), (n.number, None, "–"), (n.number, NAN, "NaN"), (n.number, -INF, "-∞"),
    # pass marks and thresholds as written; a computed one in 0..1 as a percentage
    (n.threshold, 0.86, "0.86"), (n.threshold, 0.5, "0.5"), (n.threshold, 3, "3"),
    (n.threshold, 0.6666666666666666, "0.667"),
    (n.threshold, 1e-07, "0.0000001"), (n.threshold, 1e-06, "0.000001"), (n.threshold, 2000.0, "2000"),
    (n.threshold, None, "–"),
    (n.threshold, "high", "high"),
])
def test_each_unit(fn, value, text) -> None:  # type: ignore[no-untyped-def]
    assert fn(value) == text


@pytest.mark.parametrize(("args", "kwargs", "text"), [
    ((0.41, 0.78), {}, "[0.41, 0.78]"), ((0.41, 0.78), {"rate": True}, "[41%, 78%]"), ((None, 0.3), {}, "–"),
    ((-0.02, 0.31, 3), {"sign": True}, "[-0.020, +0.310]"), ((0.31, 0.7), {}, "[0.31, 0.70]"),
])
def test_intervals(args, kwargs, text) -> None:  # type: ignore[no-untyped-def]
    assert n.interval(*args, **kwargs) == text


@pytest.mark.parametrize(("name", "value", "sign", "text"), [
    ("latency.p95", 420.4, False, "420ms"), ("latency.p95", -1500.0, True, "-1.5s"),
    ("latency.mean", 0.0, True, "+0ms"),
    ("cost.mean", 6.95e-06, False, "$0.00000695"), ("cost.mean", 0.01, True, "+$0.0100"),
    ("cost.mean", None, False, "–"),
    ("tokens.mean", 12.5, False, "12.5"), ("tokens.mean", -3.0, True, "-3.00"), ("error_rate", 0.05, False, "5%"),
])
def test_run_metrics_carry_their_unit(name, value, sign, text) -> None:  # type: ignore[no-untyped-def]
    assert n.metric(name, value, sign=sign) == text


def test_machine_fields_sizes_counts_and_distinct_pairs() -> None:
    assert [n.raw(v, 3) for v in (1.5, None, 0.0001, -0.0)] == ["1.500", "", "0.000", "0.000"]
    sizes = (512, 1536, 12.3 * 1024 ** 2, 3 * 1024 ** 3)
    assert [n.data_size(v) for v in sizes] == ["512 bytes", "1.5KB", "12.3MB", "3.0GB"]
    assert [n.count(1, "item"), n.count(3, "item"), n.count(1200, "error")] == ["1 item", "3 items", "1,200 errors"]
    assert n.distinct(1000.0004, 1000.0) == ("1000.0004", "1000")
    assert n.distinct(0.5, 0.5) == ("0.5", "0.5")
    assert n.fixed(0.4249, 2, sign=True) == "+0.42" and n.fixed(None) == "–"
    assert n.delta_interval(-0.02, 0.31) == "[-0.020, +0.310]"
    assert [n.signed(0.2), n.signed(-0.05), n.decimal(0.4249), n.decimal(None)] == ["+0.20", "-0.05", "0.42", "–"]
    assert [n.points(0.3), n.points(-0.025), n.points(0.0), n.points(None)] == ["+30 points", "-2.5 points",
                                                                                  "+0 points", "–"]


def test_no_exponent_anywhere() -> None:
    for value in (1e-15, 3.3e-9, 7.7e-5, 1e15, 9.99e21, -2e-12):
        for fn in (n.score, n.delta, n.percent, n.duration, n.money, n.number, n.threshold, n.seconds):
            assert "e" not in fn(value).replace("less", ""), (fn.__name__, value, fn(value))
