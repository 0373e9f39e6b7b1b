"""The run page's picture: one bar per step from start to finish, rendered server-side.

Sequential steps get a row each; a fan-out gets one summary row and, inside a collapsible
`<details>`, its branches packed into lanes (a branch takes the first lane free at its start,
so a lane is a slot the fan-out kept busy). Retries are ticks on their step's bar (from the
`step_retrying` events), sleeps and callbacks are drawn as waits, child runs are links.
Everything is HTML with inline styles from this module: no script, no external asset.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from runtime.core.identity import child_run_key, child_run_key_prefix
from runtime.models import Event, EventType, FanoutGroup, Run, Step, StepKind
from runtime.models.states import WAIT_STEP_KINDS, shown_step_status

MAX_STEPS = 5000  # a longer run shows its first steps and says how many are left out
MAX_RETRY_MARKS = 5000
OPEN_BRANCHES = 100  # fan-outs up to this size start expanded
REFRESH_SECONDS = 3  # a run that has not finished reloads its page this often

_FIELDS = ("id", "position", "name", "kind", "status", "attempt", "created_at", "started_at",
           "finished_at", "wake_at")  # fmt: skip


@dataclass
class Bar:
    """One step on the time axis (percentages of the run's span)."""

    position: int
    name: str
    kind: str
    status: str
    attempt: int
    start: datetime
    end: datetime | None
    retries: list[datetime] = field(default_factory=list)
    child: tuple[uuid.UUID, str] | None = None  # the child run's id and status


@dataclass
class Axis:
    origin: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return max((self.end - self.origin).total_seconds(), 1e-6)

    def at(self, moment: datetime) -> float:
        """`moment` as a percentage of the axis, clamped to it."""
        offset = (moment - self.origin).total_seconds() / self.seconds * 100
        return min(max(offset, 0.0), 100.0)


def timeline_context(run: Run) -> dict[str, Any]:
    """What the run page's template needs: the rendered picture and the refresh interval."""
    bars, left_out = _bars(run)
    axis = Axis(run.created_at, run.finished_at or _latest(run, bars))
    groups = list(
        FanoutGroup.objects.filter(run=run)
        .order_by("first_position")
        .values_list("first_position", "total", "verdict")
    )
    html = _render(bars, groups, axis, left_out)
    return {
        "timeline_html": html,
        "timeline_seconds": f"{axis.seconds:.3f}",
        "refresh_seconds": None if run.is_finished else REFRESH_SECONDS,
    }


def _latest(run: Run, bars: list[Bar]) -> datetime:
    ends = [moment for bar in bars for moment in (bar.start, bar.end) if moment is not None]
    return max([timezone.now(), *ends]) if not run.is_finished else max([run.created_at, *ends])


def _bars(run: Run) -> tuple[list[Bar], int]:
    rows = list(Step.objects.filter(run=run).order_by("position").values(*_FIELDS)[: MAX_STEPS + 1])
    left_out = 0
    if len(rows) > MAX_STEPS:
        left_out = Step.objects.filter(run=run).count() - MAX_STEPS
        rows = rows[:MAX_STEPS]
    bars = {
        row["id"]: Bar(
            row["position"],
            row["name"],
            row["kind"],
            shown_step_status(row["status"], row["kind"]),
            row["attempt"],
            row["started_at"] or row["created_at"],
            row["finished_at"],
        )
        for row in rows
    }
    _mark_retries(run, bars, {row["id"]: row["created_at"] for row in rows})
    _link_children(run, bars)
    return list(bars.values()), left_out


def _mark_retries(run: Run, bars: dict[uuid.UUID, Bar], created: dict[uuid.UUID, datetime]) -> None:
    """Tick each retry on its bar, which then starts where the step's first attempt did."""
    retries = (
        Event.objects.filter(run=run, type=EventType.STEP_RETRYING)
        .order_by("seq")
        .values_list("step_id", "created_at")[:MAX_RETRY_MARKS]
    )
    for step, moment in retries:
        bar = bars.get(step)
        if bar is not None:
            bar.retries.append(moment)
            bar.start = min(bar.start, created[step])


def _link_children(run: Run, bars: dict[uuid.UUID, Bar]) -> None:
    by_position = {bar.position: bar for bar in bars.values() if bar.kind == StepKind.CHILD}
    if not by_position:
        return
    prefix = child_run_key_prefix(run.id)
    children = Run.objects.filter(
        owner_id=run.owner_id,  # a child has its parent's owner
        idempotency_key__in=[child_run_key(run.id, p) for p in by_position],
    ).values_list("id", "idempotency_key", "status")
    for child_id, key, status in children:
        bar = by_position.get(int(str(key).removeprefix(prefix)))
        if bar is not None:
            bar.child = (child_id, status)


# -- rendering ----------------------------------------------------------------------------------


def _render(
    bars: list[Bar], groups: list[tuple[int, int, str | None]], axis: Axis, left_out: int
) -> SafeString:
    starts = {first: (total, verdict) for first, total, verdict in groups}
    parts: list[str] = []
    index = 0
    while index < len(bars):
        bar = bars[index]
        if bar.position in starts:
            total, verdict = starts[bar.position]
            branches = [b for b in bars[index : index + total]
                        if b.position < bar.position + total]  # fmt: skip
            parts.append(_fanout(branches, total, verdict, axis))
            index += len(branches)
            continue
        parts.append(_row(f"#{bar.position} {bar.name}", [bar], axis, "fanfold-step"))
        index += 1
    if left_out:
        parts.append(f"<p class='fanfold-tl-more'>{left_out} more steps are not drawn.</p>")
    if not parts:
        parts.append("<p class='fanfold-tl-more'>No steps yet.</p>")
    return mark_safe(_axis_row(axis) + "".join(parts))


def _axis_row(axis: Axis) -> str:
    ticks = "".join(
        f"<span class='fanfold-tl-tick' style='left:{i * 25}%'>{axis.seconds * i / 4:.3f} s</span>"
        for i in range(5)
    )
    return (
        "<div class='fanfold-tl-row fanfold-tl-axis'><span class='fanfold-tl-label'>"
        f"since created</span><span class='fanfold-tl-track'>{ticks}</span></div>"
    )


def _fanout(branches: list[Bar], total: int, verdict: str | None, axis: Axis) -> str:
    first = branches[0].position if branches else 0
    done = sum(1 for b in branches if b.status == "completed")
    failed = sum(1 for b in branches if b.status == "failed")
    lanes = _lanes(branches, axis)
    summary = (
        f"fan-out #{first} to #{first + total - 1}: {total} branches, {done} completed"
        + (f", {failed} failed" if failed else "")
        + f" ({escape(verdict or 'open')}), {len(lanes)} lane{'' if len(lanes) == 1 else 's'}"
    )
    span = _span_bar(branches, axis)
    opened = " open" if total <= OPEN_BRANCHES else ""
    rows = "".join(
        _row(f"lane {number + 1}", lane, axis, "fanfold-branch")
        for number, lane in enumerate(lanes)
    )
    return (
        f"<details class='fanfold-tl-fanout'{opened}><summary>"
        f"<span class='fanfold-tl-row'>"
        f"<span class='fanfold-tl-label' title='{summary}'>{summary}</span>"
        f"<span class='fanfold-tl-track'>{span}</span></span></summary>{rows}</details>"
    )


def _span_bar(branches: list[Bar], axis: Axis) -> str:
    if not branches:
        return ""
    start = min(b.start for b in branches)
    ends = [b.end for b in branches]
    end = axis.end if any(e is None for e in ends) else max(e for e in ends if e is not None)
    left, width = axis.at(start), max(axis.at(end) - axis.at(start), 0.2)
    style = f"left:{left:.3f}%;width:{width:.3f}%"
    return f"<span class='fanfold-bar fanfold-span' style='{style}'></span>"


def _lanes(branches: list[Bar], axis: Axis) -> list[list[Bar]]:
    """Greedy interval packing: each branch goes to the first lane that is free at its start."""
    lanes: list[list[Bar]] = []
    ends: list[datetime] = []
    for bar in sorted(branches, key=lambda b: (b.start, b.position)):
        end = bar.end or axis.end
        for number, free_at in enumerate(ends):
            if free_at <= bar.start:
                lanes[number].append(bar)
                ends[number] = end
                break
        else:
            lanes.append([bar])
            ends.append(end)
    return lanes


def _row(label: str, bars: list[Bar], axis: Axis, kind: str) -> str:
    drawn = "".join(_bar(bar, axis) for bar in bars)
    return (
        f"<div class='fanfold-tl-row {kind}'><span class='fanfold-tl-label' "
        f"title='{escape(label)}'>{escape(label)}</span>"
        f"<span class='fanfold-tl-track'>{drawn}</span></div>"
    )


def _bar(bar: Bar, axis: Axis) -> str:
    end = bar.end or axis.end
    left = axis.at(bar.start)
    width = max(axis.at(end) - left, 0.15)
    seconds = (end - bar.start).total_seconds()
    wait = " fanfold-wait" if bar.kind in WAIT_STEP_KINDS else ""
    title = f"#{bar.position} {bar.name}: {bar.status}, attempt {bar.attempt}, {seconds:.3f} s"
    if bar.retries:
        title += f", {len(bar.retries)} retr{'y' if len(bar.retries) == 1 else 'ies'}"
    marks = "".join(
        f"<span class='fanfold-retry' style='left:{_within(axis, bar, moment):.2f}%'></span>"
        for moment in bar.retries
    )
    child = ""
    if bar.child is not None:
        child_id, status = bar.child
        url = reverse("admin:runtime_run_change", args=[child_id])
        child = (
            f"<a class='fanfold-child' href='{escape(url)}' style='left:{left + width:.3f}%'>"
            f"child run ({escape(status)})</a>"
        )
    return (
        f"<span class='fanfold-bar fanfold-{escape(bar.status)}{wait}' "
        f"data-position='{bar.position}' title='{escape(title)}' "
        f"style='left:{left:.3f}%;width:{width:.3f}%'>{marks}</span>{child}"
    )


def _within(axis: Axis, bar: Bar, moment: datetime) -> float:
    """Where `moment` falls inside the bar, as a percentage of the bar's own width."""
    end = bar.end or axis.end
    length = (end - bar.start).total_seconds()
    if length <= 0:
        return 0.0
    return min(max((moment - bar.start).total_seconds() / length * 100, 0.0), 100.0)
