"""`ctx.patched` with real workers: a run started on old code and one started on new code are
both in flight across a deploy and a worker restart; each finishes on its own branch."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from runtime import start
from runtime.models import Event, Step
from runtime.services import post_callback
from runtime.testing import callback_token, replay
from tests.acceptance import versioned_workflows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)


def _worker(name: str, version: int) -> Any:
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, flows.VERSION_ENV: str(version)}
    return running_worker(name, "threads", 2, **env)


def _waiting(run_id: Any) -> str:
    wait_until(
        lambda: Step.objects.filter(run_id=run_id, kind="callback").exists(),
        60,
        message=f"run {run_id} to wait for its callback",
    )
    token = callback_token(run_id)
    assert token is not None
    return token


@contextmanager
def _code_version(version: int) -> Iterator[None]:
    """This process's workflow code as of `version` (the replay check runs here)."""
    before = os.environ.get(flows.VERSION_ENV)
    os.environ[flows.VERSION_ENV] = str(version)
    try:
        yield
    finally:
        if before is None:
            del os.environ[flows.VERSION_ENV]
        else:
            os.environ[flows.VERSION_ENV] = before


def test_patched_old_and_new_runs_finish_on_their_branches_across_a_restart(
    counters_redis: Any,
) -> None:
    with _worker("v1", 1):
        old = start("tests.versioned.order", "old")
        old_token = _waiting(old.id)
    with _worker("v2-first", 2):
        new = start("tests.versioned.order", "new")
        new_token = _waiting(new.id)
    # Both runs are waiting with nobody serving them; the restarted v2 worker resumes both.
    with _worker("v2-again", 2):
        post_callback(old_token, result="go-old")
        post_callback(new_token, result="go-new")
        assert old.wait(timeout=60) == ["a", "b", "go-old", "d"]
        assert new.wait(timeout=60) == ["a", "c", "go-new", "d"]

    bodies = Counter(b.decode() for b in counters_redis.lrange(flows.BODIES, 0, -1))
    assert bodies == Counter(["old:a", "old:b", "old:d", "new:a", "new:c", "new:d"])  # once each
    kinds = list(
        Step.objects.filter(run_id=new.id).order_by("position").values_list("kind", "name")
    )
    assert kinds[:3] == [("step", "a"), ("marker", "charge-v2"), ("step", "c")]
    assert Event.objects.filter(run_id=new.id, type="marker_recorded").count() == 1
    assert not Event.objects.filter(run_id=old.id, type="marker_recorded").exists()

    with _code_version(2):
        assert replay(old.id).ok and replay(new.id).ok
    with _code_version(1):  # the old code no longer matches the new run
        mismatch = replay(new.id).mismatch
        assert mismatch is not None and (mismatch.position, mismatch.reason) == (3, "name")
        assert replay(old.id).ok
