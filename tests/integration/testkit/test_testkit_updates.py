"""Updates in the test kit: `env.update` (and `RunHandle.update`, `start_with_update`,
`get_update(wait=)`) run the run in the test's thread until it answers, on the virtual clock;
a run that cannot answer without the outside world raises RunBlocked, its update accepted."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from testkit_flows import cart

from runtime import UpdateRejected, get_update, start_with_update
from runtime.models import RunUpdate
from runtime.testing import RunBlocked, WorkflowEnvironment


def test_testkit_update_is_answered_and_the_run_waits_for_the_next(
    env: WorkflowEnvironment,
) -> None:
    run = env.start(cart)
    assert env.update(run, "add", {"sku": "A1"}) == {"count": 1}
    waiting = run.waiting_on()
    assert waiting is not None and (waiting.kind, waiting.name) == ("update", "add, checkout")
    assert waiting.until == env.now() + timedelta(days=1)
    assert run.update("add", {"sku": "B2"}) == {"count": 2}  # the handle's own call, driven too
    with pytest.raises(UpdateRejected, match="needs a sku"):
        env.update(run.id, "add", {"qty": 3})  # the validator: nothing recorded
    assert RunUpdate.objects.filter(run_id=run.id).count() == 2
    done = env.update(str(run.id), "checkout")
    assert done["items"] == ["A1", "B2"] and run.wait() == ["A1", "B2"]


def test_testkit_update_answered_after_a_timer_skips_virtual_time(
    env: WorkflowEnvironment,
) -> None:
    began = env.now()
    run = env.start(cart)
    assert env.update(run, "add", {"sku": "G", "gift": True}) == {"count": 1}
    assert env.now() == began + timedelta(hours=2)
    reply = env.update(run, "checkout")
    assert datetime.fromisoformat(reply["at"]) == env.now() == began + timedelta(hours=2)


def test_testkit_update_the_run_cannot_answer_raises_run_blocked(
    env: WorkflowEnvironment,
) -> None:
    began = env.now()
    run = env.start(cart)
    with pytest.raises(RunBlocked, match="cannot answer the update: it waits for callback"):
        env.update(run, "add", {"sku": "Q", "ask": True}, update_id="ask-1")
    assert env.now() == began  # no timer: the clock stays
    assert get_update(run.id, "ask-1").status == "pending"  # accepted all the same
    env.post_callback(run, "confirm", result="yes")
    assert get_update(run.id, "ask-1", wait=5).reply == {"count": 1}  # the wait drives it
    assert env.update(run, "add", {"sku": "Q", "ask": True}, update_id="ask-1") == {"count": 1}


def test_testkit_update_idle_timeout_fires_on_the_clock(env: WorkflowEnvironment) -> None:
    began = env.now()
    run = env.start(cart)
    env.update(run, "add", {"sku": "A1"})
    env.skip(timedelta(days=1) - timedelta(seconds=1))
    assert run.status == "waiting"
    assert run.wait() == ["A1"]  # abandoned after a day without updates
    assert env.now() == began + timedelta(days=1)


def test_testkit_start_with_update_in_the_environment(env: WorkflowEnvironment) -> None:
    run, reply = start_with_update(cart, idempotency_key="cart-1", update=("add", {"sku": "A"}))
    assert reply == {"count": 1}
    again, second = start_with_update(cart, idempotency_key="cart-1", update=("add", {"sku": "B"}))
    assert again.id == run.id and second == {"count": 2}
