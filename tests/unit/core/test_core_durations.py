"""Durations as written in settings and decorators (runtime.core.durations)."""

from __future__ import annotations

import pickle
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.core.durations import InvalidDuration, format_duration, parse_duration
from runtime.core.errors import FanfoldError

durations = st.timedeltas(min_value=timedelta(0), max_value=timedelta.max)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("12h", timedelta(hours=12)),
        ("30d", timedelta(days=30)),
        ("1w", timedelta(weeks=1)),
        ("1.5h", timedelta(minutes=90)),
        (" 2 d ", timedelta(days=2)),
        ("90", timedelta(seconds=90)),
        ("0.25", timedelta(milliseconds=250)),
        ("0.0000015s", timedelta(microseconds=2)),  # rounded half to even, like timedelta
        ("999999999d", timedelta(days=999_999_999)),
    ],
)
def test_parse_duration_reads_text(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


def test_parse_duration_takes_numbers_of_seconds_and_timedeltas() -> None:
    assert parse_duration(90) == timedelta(seconds=90)
    assert parse_duration(0.5) == timedelta(milliseconds=500)
    assert parse_duration(timedelta(days=3)) == timedelta(days=3)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("1y", "'1y' is not a duration"),
        ("1M", "'1M' is not a duration"),  # no months: they have no fixed length
        ("30 days", "'30 days' is not a duration"),
        ("1e5s", "'1e5s' is not a duration"),
        ("d", "'d' is not a duration"),
        ("", "'' is not a duration"),
        ("1d2h", "'1d2h' is not a duration"),
        ("\u0663d", "is not a duration"),  # an Arabic-Indic digit
        (True, "True is not a duration"),
        (None, "None (a NoneType) is not a duration"),
        ([1], "[1] (a list) is not a duration"),
        (float("nan"), "nan is not a duration"),
        (float("inf"), "inf is not a duration"),
        ("-1d", "duration '-1d' is negative"),
        ("- 1d", "duration '- 1d' is negative"),
        (-3, "duration -3 is negative"),
        (timedelta(seconds=-1), "is negative"),
        ("1000000000d", "duration '1000000000d' is too long"),
        ("9" * 80 + "w", "is too long"),
        (1e300, "is too long"),
        ("0s", "duration '0s' is zero"),
        ("0.0000004s", "is zero (to the microsecond)"),
        (0, "duration 0 is zero"),
    ],
)
def test_parse_duration_rejects_with_a_message_naming_the_value(
    value: object, fragment: str
) -> None:
    with pytest.raises(InvalidDuration) as raised:
        parse_duration(value)
    assert fragment in str(raised.value)


def test_parse_duration_allows_zero_when_asked() -> None:
    assert parse_duration("0s", allow_zero=True) == timedelta(0)
    assert parse_duration(0, allow_zero=True) == timedelta(0)


def test_invalid_duration_is_a_typed_value_error_that_pickles() -> None:
    with pytest.raises(InvalidDuration) as raised:
        parse_duration("soon")
    error = raised.value
    assert isinstance(error, ValueError) and isinstance(error, FanfoldError)
    assert error.code == "invalid_duration"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy)) == (InvalidDuration, str(error))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(days=30), "30d"),
        (timedelta(days=14), "2w"),  # a tie in length goes to the larger unit
        (timedelta(hours=36), "36h"),
        (timedelta(minutes=90), "90m"),
        (timedelta(seconds=90), "90s"),
        (timedelta(seconds=1.5), "1.5s"),
        (timedelta(hours=12), "12h"),
        (timedelta(hours=1, seconds=1), "3601s"),
        (timedelta(microseconds=1), "0.000001s"),
        (timedelta(0), "0s"),
    ],
)
def test_format_duration_writes_the_shortest_text(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


def test_format_duration_rejects_a_negative_duration() -> None:
    with pytest.raises(InvalidDuration, match="negative"):
        format_duration(timedelta(seconds=-1))


@given(durations)
def test_format_duration_round_trips_through_parse(value: timedelta) -> None:
    assert parse_duration(format_duration(value), allow_zero=True) == value


@given(durations)
def test_format_duration_is_no_longer_than_seconds_or_any_whole_unit(value: timedelta) -> None:
    text = format_duration(value)
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    for unit, size in {"s": 10**6, "m": 6 * 10**7, "h": 36 * 10**8, "d": 864 * 10**8}.items():
        if micros % size == 0:
            assert len(text) <= len(f"{micros // size}{unit}")


@given(st.integers(min_value=1, max_value=10**9), st.sampled_from("smhdw"))
def test_parse_duration_reads_every_whole_amount_and_unit(amount: int, unit: str) -> None:
    seconds = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}[unit] * amount
    if seconds > timedelta.max.days * 86_400 + timedelta.max.seconds:
        with pytest.raises(InvalidDuration, match="too long"):
            parse_duration(f"{amount}{unit}")
    else:
        assert parse_duration(f"{amount}{unit}") == timedelta(seconds=seconds)
