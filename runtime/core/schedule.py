"""Schedules, pure: when a workflow's ticks fall and which due ticks a catch-up policy runs.

Cron expressions, time zones and daylight-saving changes are cronsim's job (a maintained
library), not ours: a tick at a local time that a DST change skips runs at the first valid
time after it, and a repeated local hour runs once. Interval schedules tick at whole multiples
of the interval since the Unix epoch (UTC), so every worker computes the same ticks without
sharing an anchor.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

CatchUp = Literal["skip", "latest", "all"]
CATCHUP_POLICIES: tuple[CatchUp, ...] = ("skip", "latest", "all")
MAX_TICKS_PER_PASS = 1000  # "all" after a long outage starts at most this many runs per pass
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Cron:
    """A cron expression (five fields, as crontab(5)) evaluated in time zone `tz`."""

    expr: str
    tz: str = "UTC"

    def __post_init__(self) -> None:
        if not isinstance(self.expr, str) or not self.expr.strip():
            raise ValueError("Cron takes a cron expression such as '0 6 * * *'")
        try:
            ZoneInfo(self.tz)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            raise ValueError(
                f"Cron(tz=...) must be an IANA time zone name, not {self.tz!r}"
            ) from None
        try:
            CronSim(self.expr, datetime.now(ZoneInfo(self.tz)))
        except CronSimError as exc:
            raise ValueError(f"{self.expr!r} is not a valid cron expression: {exc}") from None

    def next_after(self, moment: datetime) -> datetime:
        """The first tick strictly after `moment` (aware), in UTC."""
        local = moment.astimezone(ZoneInfo(self.tz)).replace(microsecond=0)
        return next(iter(CronSim(self.expr, local))).astimezone(UTC)


@dataclass(frozen=True)
class Interval:
    """A tick every `seconds`, at whole multiples of it since the Unix epoch."""

    seconds: float

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError("a schedule interval must be longer than zero")

    def next_after(self, moment: datetime) -> datetime:
        elapsed = (moment.astimezone(UTC) - _EPOCH).total_seconds()
        count = int(elapsed // self.seconds) + 1
        return _EPOCH + timedelta(seconds=count * self.seconds)


Schedule = Cron | Interval


def as_schedule(value: object) -> Schedule:
    """What `@workflow(schedule=...)` accepts: a Cron, or a timedelta interval."""
    if isinstance(value, Cron | Interval):
        return value
    if isinstance(value, timedelta):
        return Interval(value.total_seconds())
    raise TypeError("workflow(schedule=...) takes Cron(expr, tz=...) or a timedelta")


def check_catchup(value: object) -> CatchUp:
    if value not in CATCHUP_POLICIES:
        raise ValueError(f"catchup must be one of {', '.join(CATCHUP_POLICIES)}, not {value!r}")
    return value


def ticks_between(schedule: Schedule, after: datetime, until: datetime) -> Iterator[datetime]:
    """Ticks in (after, until], oldest first."""
    tick = schedule.next_after(after)
    while tick <= until:
        yield tick
        tick = schedule.next_after(tick)


@dataclass(frozen=True)
class DueTicks:
    """The ticks to start a run for, and the newest tick handled (the next pass starts after
    it, whether its run was started or skipped)."""

    run: list[datetime]
    through: datetime


def due_ticks(
    schedule: Schedule,
    policy: CatchUp,
    last_tick: datetime,
    now: datetime,
    grace: float,
) -> DueTicks:
    """What to do about the ticks in (last_tick, now].

    A due tick less than `grace` seconds old is on time and always runs. Older ones were
    missed (no worker ran): "skip" drops them, "latest" runs the newest of them, "all" runs
    every one (at most MAX_TICKS_PER_PASS per call; the rest on the next pass).
    """
    if policy != "all" and isinstance(schedule, Interval):
        # Only the newest ticks can matter: jump over the middle of a long outage.
        horizon = now - timedelta(seconds=schedule.seconds * MAX_TICKS_PER_PASS)
        last_tick = max(last_tick, horizon)
    due: list[datetime] = []
    for tick in ticks_between(schedule, last_tick, now):
        due.append(tick)
        if policy == "all" and len(due) >= MAX_TICKS_PER_PASS:
            break
        if len(due) > 2 * MAX_TICKS_PER_PASS:
            due = due[-MAX_TICKS_PER_PASS:]
    through = due[-1] if due else last_tick
    if policy == "all":
        return DueTicks(due, through)
    on_time = [t for t in due if (now - t).total_seconds() < grace]
    missed = due[: len(due) - len(on_time)]
    if policy == "latest" and missed:
        return DueTicks([missed[-1], *on_time], through)
    return DueTicks(on_time, through)


def tick_key(workflow: str, tick: datetime) -> str:
    """The idempotency key of the run a tick starts: `schedule:<workflow>:<tick ISO time>`."""
    return f"schedule:{workflow}:{tick.astimezone(UTC).isoformat()}"


def describe(schedule: Schedule) -> tuple[str, str, str]:
    """(kind, expression, timezone) as a Schedule row stores them."""
    if isinstance(schedule, Cron):
        return "cron", schedule.expr, schedule.tz
    return "interval", f"{schedule.seconds:g}", "UTC"
