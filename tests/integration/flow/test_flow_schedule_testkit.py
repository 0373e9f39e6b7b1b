"""Schedule ticks on the test kit's virtual clock: `env.skip` fires each tick at its time, for
the schedules the environment was given; others never tick."""

from __future__ import annotations

from datetime import timedelta

from runtime.models import Run
from runtime.testing import WorkflowEnvironment
from tests.integration.flow.flow_workflows import every_ten_seconds


def test_flow_schedule_ticks_follow_the_virtual_clock() -> None:
    with WorkflowEnvironment(schedules=[every_ten_seconds]) as env:
        began = env.now()
        env.skip(timedelta(seconds=9))
        first = began.timestamp() // 10 * 10 + 10  # the first whole ten seconds after
        due = [first + 10 * i for i in range(5) if first + 10 * i <= began.timestamp() + 35]
        early = [t for t in due if t <= began.timestamp() + 9]
        assert Run.objects.filter(workflow=every_ten_seconds.name).count() == len(early)
        env.skip(timedelta(seconds=26))
        runs = Run.objects.filter(workflow=every_ten_seconds.name)
        assert sorted(r.created_at.timestamp() for r in runs) == due
        assert {r.status for r in runs} == {"completed"}


def test_flow_schedule_not_named_does_not_tick_in_the_test_kit() -> None:
    with WorkflowEnvironment() as env:
        env.skip(timedelta(minutes=1))
        assert not Run.objects.filter(workflow=every_ten_seconds.name).exists()
