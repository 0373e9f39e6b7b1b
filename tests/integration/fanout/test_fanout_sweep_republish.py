"""The fan-out sweep republishes a lost branch once per grace, not once per sweep interval."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from fanout_harness import Branches

from publisher.fake import FakeTransport
from runtime.executor import execute
from runtime.fanout.sweep import sweep_fanouts_once
from runtime.models import FanoutGroup, Step
from runtime.services import start_run
from tests.support.dispatch import RecordingDispatcher


def _due_now(run_id: object) -> None:
    FanoutGroup.objects.filter(run_id=run_id).update(check_at=timezone.now() - timedelta(1))


def test_fanout_sweep_republished_branches_wait_a_grace_before_the_next_republish(
    fake: FakeTransport, branches: Branches, dispatcher: RecordingDispatcher
) -> None:
    # A worker that holds the messages but never consumes them (after a broker restart, say):
    # every sweep finds the branches unclaimed.
    run, _ = start_run("tests.fanout.squares", [3])
    execute(run.id)
    branches.delivered = len(fake.delivered)
    dispatcher.depth = 0  # an empty queue: the short grace, two sweep intervals (1 s here)
    Step.objects.filter(run_id=run.id).update(wake_at=timezone.now() - timedelta(seconds=2))
    _due_now(run.id)
    assert sweep_fanouts_once() == 3

    _due_now(run.id)  # the next sweep interval: still unclaimed, but republished just now
    assert sweep_fanouts_once() == 0
    assert len(branches.pending()) == 3

    Step.objects.filter(run_id=run.id).update(wake_at=timezone.now() - timedelta(seconds=2))
    _due_now(run.id)  # a grace after the republish: due again
    assert sweep_fanouts_once() == 3
