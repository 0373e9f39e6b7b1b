"""Pure schedule rules: cron ticks in time zones across DST, intervals, catch-up policies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runtime.core.rates import parse_rate
from runtime.core.schedule import Cron, Interval, as_schedule, due_ticks, tick_key
from runtime.registry import workflow


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_schedule_cron_ticks_in_its_time_zone() -> None:
    daily = Cron("0 6 * * *", tz="Europe/Paris")
    assert daily.next_after(utc(2026, 12, 1, 4, 0)) == utc(2026, 12, 1, 5, 0)  # CET = UTC+1
    assert daily.next_after(utc(2026, 7, 1, 3, 0)) == utc(2026, 7, 1, 4, 0)  # CEST = UTC+2


def test_schedule_cron_tick_in_a_skipped_dst_hour_runs_once_after_it() -> None:
    # 2026-03-29 02:30 does not exist in Paris (clocks go 02:00 -> 03:00).
    nightly = Cron("30 2 * * *", tz="Europe/Paris")
    tick = nightly.next_after(utc(2026, 3, 28, 12, 0))
    assert tick == utc(2026, 3, 29, 1, 0)  # 03:00 CEST
    assert nightly.next_after(tick) == utc(2026, 3, 30, 0, 30)


def test_schedule_cron_tick_in_a_repeated_dst_hour_runs_once() -> None:
    # 2026-10-25 02:30 happens twice in Paris; one run.
    nightly = Cron("30 2 * * *", tz="Europe/Paris")
    ticks = [nightly.next_after(utc(2026, 10, 24, 12, 0))]
    ticks.append(nightly.next_after(ticks[0]))
    assert ticks[1] - ticks[0] >= timedelta(hours=23)


def test_schedule_interval_ticks_at_multiples_since_the_epoch() -> None:
    every = Interval(10)
    assert every.next_after(utc(2026, 1, 1, 0, 0, 3)) == utc(2026, 1, 1, 0, 0, 10)
    assert every.next_after(utc(2026, 1, 1, 0, 0, 10)) == utc(2026, 1, 1, 0, 0, 20)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("skip", [5]), ("latest", [4, 5]), ("all", [1, 2, 3, 4, 5])],
)
def test_schedule_due_ticks_follow_the_catchup_policy(policy: str, expected: list[int]) -> None:
    # Ticks at 1..5 s are due at 5.5 s; only 5 is younger than the 1 s grace.
    due = due_ticks(Interval(1), policy, utc(2026, 1, 1), utc(2026, 1, 1, 0, 0, 5, 500000), 1.0)  # type: ignore[arg-type]
    assert [t.second for t in due.run] == expected
    assert due.through == utc(2026, 1, 1, 0, 0, 5)


def test_schedule_tick_key_is_the_tick_in_utc() -> None:
    tick = Cron("0 6 * * *", tz="Europe/Paris").next_after(utc(2026, 12, 1))
    assert tick_key("reports.daily", tick) == "schedule:reports.daily:2026-12-01T05:00:00+00:00"


def test_schedule_bad_definitions_fail_at_decoration() -> None:
    with pytest.raises(ValueError, match="cron expression"):
        Cron("61 * * * *")
    with pytest.raises(ValueError, match="time zone"):
        Cron("* * * * *", tz="Mars/Olympus")
    with pytest.raises(TypeError, match="timedelta"):
        as_schedule("daily")
    with pytest.raises(ValueError, match="catchup"):
        workflow(name="tests.bad", schedule=timedelta(seconds=1), catchup="some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concurrency"):
        workflow(name="tests.bad", concurrency=0)
    with pytest.raises(TypeError, match="no arguments"):
        workflow(name="tests.bad.args", schedule=timedelta(hours=1))(lambda ctx, x: x)


def test_rate_parses_counts_per_period() -> None:
    assert parse_rate("20/s").spacing == pytest.approx(0.05)
    assert parse_rate("100/m").spacing == pytest.approx(0.6)
    assert parse_rate("5/h").spacing == pytest.approx(720.0)
    for bad in ("20", "0/s", "20/d", "x/s", 20):
        with pytest.raises(ValueError, match="rate_limit"):
            parse_rate(bad)
