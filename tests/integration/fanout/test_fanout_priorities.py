"""A run's priority on its fan-out: every message of its branches carries it, what a branch
sends in turn (the next branches, a retry, the run's resume) too, and the sweep republishes
the branches of higher-priority runs first."""

from __future__ import annotations

from datetime import timedelta

from celery import current_app
from django.utils import timezone
from fanout_harness import Branches

from publisher.fake import FakeTransport
from runtime.dispatch import broker_priority
from runtime.executor import ExecutionOutcome, execute
from runtime.fanout.sweep import sweep_fanouts_once
from runtime.models import FanoutGroup, Run, Step
from runtime.services import start_run
from tests.support.dispatch import Enqueued, Later


def level(priority: int) -> int | None:
    return broker_priority(str(current_app.conf.broker_url), priority)


def test_fanout_priorities_travel_with_every_branch_message(
    fake: FakeTransport, branches: Branches, enqueued: Enqueued
) -> None:
    run, _ = start_run("tests.fanout.squares", [5], {"max_concurrency": 2}, priority=6)
    assert execute(run.id).outcome is ExecutionOutcome.SUSPENDED
    branches.drain()  # completions release the other three, 2 at a time
    assert len(fake.delivered) == 5
    assert {m.kwargs.get("priority") for m in fake.delivered} == {6}
    assert {m.routing.priority for m in fake.delivered} == {level(6)}
    assert enqueued.priorities == [6, 6]  # the start and the resume the last branch asked for
    assert execute(run.id).outcome is ExecutionOutcome.COMPLETED


def test_fanout_priorities_a_retry_is_published_at_the_run_priority(
    branches: Branches, later: Later
) -> None:
    run, _ = start_run("tests.fanout.flakies", [2], priority=3)
    execute(run.id)
    branches.drain()  # both first attempts fail and publish their retries for later
    assert len(later.calls) == 2
    assert later.priorities == [3, 3]


def test_fanout_priorities_sweep_republishes_higher_priority_runs_first(
    fake: FakeTransport, branches: Branches
) -> None:
    runs = [start_run("tests.fanout.squares", [2], priority=p)[0] for p in (1, 8, 4)]
    for run in runs:
        execute(run.id)
    branches.delivered = len(fake.delivered)  # every message was lost
    long_ago = timezone.now() - timedelta(seconds=60)
    Step.objects.update(wake_at=long_ago)
    FanoutGroup.objects.update(check_at=long_ago)

    assert sweep_fanouts_once() == 6
    again = branches.pending()
    by_run = {str(run.id): run.priority for run in Run.objects.all()}
    assert [by_run[m.args[0]] for m in again] == [8, 8, 4, 4, 1, 1]
    assert [m.routing.priority for m in again] == [level(p) for p in (8, 8, 4, 4, 1, 1)]
