"""A callback token names its run; a token of the earlier form (the MAC alone), held by users
of callbacks created before, still completes its callback and replays unchanged."""

from __future__ import annotations

import pytest
from callback_flows import run_once, run_row, start, token_of

from runtime import conf
from runtime.core.callbacks import token_digest, token_run
from runtime.core.clock import FakeClock
from runtime.executor import ExecutionOutcome
from runtime.models import Step
from runtime.services import post_callback
from tests.support.callback_tokens import earlier_form

pytestmark = pytest.mark.usefixtures("db_ready")


def test_callback_token_starts_with_its_run(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.approval", "o-40")
    run_once(run_id, clock)
    assert token_run(token_of(run_id)) == run_id


def test_callback_token_of_the_earlier_form_completes_its_callback(clock: FakeClock) -> None:
    run_id = start("tests.callbacks.approval", "o-41")
    run_once(run_id, clock)
    step = Step.objects.get(run_id=run_id, kind="callback")
    earlier = earlier_form(conf.token_secrets()[0], step.id)
    Step.objects.filter(id=step.id, run_id=run_id).update(callback_token=token_digest(earlier))
    assert token_of(run_id) == earlier  # a replay hands out the token it handed out before

    receipt = post_callback(earlier, result={"approved": True})

    assert receipt.status == "completed"
    assert run_once(run_id, clock).outcome is ExecutionOutcome.COMPLETED
    assert run_row(run_id).result == {"order": "o-41", "decision": {"approved": True}}
