"""A validator that raises something other than a refusal: the update is refused all the same
(UpdateValidatorFailed, 422 over REST, with the exception's type and message), logged with its
traceback, nothing recorded; Django's ValidationError refuses like ValueError (400)."""

from __future__ import annotations

import logging
import pickle
import uuid
from typing import Any

import pytest
import update_flows  # noqa: F401  (registers the workflows)
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from update_pump import Pump

from runtime import (
    UpdateRejected,
    UpdateValidatorFailed,
    get_run,
    start,
    start_with_update,
    workflow,
)
from runtime.models import Event, Run, RunUpdate
from runtime.testing import InMemoryDispatcher
from tests.support.users import operator
from tests.support.waiting import wait_until


@pytest.fixture
def ops(runs: InMemoryDispatcher) -> APIClient:
    cache.clear()  # throttling counts
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=operator('vic')).key}")
    return api


def _recorded(run_id: uuid.UUID) -> tuple[int, int]:
    return RunUpdate.objects.filter(run_id=run_id).count(), Event.objects.filter(
        run_id=run_id, type="update_received"
    ).count()


def test_updates_validator_failure_refuses_over_python_and_is_logged(
    runs: InMemoryDispatcher, caplog: pytest.LogCaptureFixture
) -> None:
    run = start("tests.upd.fussy")
    runs.join()
    handle = get_run(run.id)
    with (
        caplog.at_level(logging.WARNING, logger="runtime.updates"),
        pytest.raises(UpdateValidatorFailed) as failed,
    ):
        handle.update("add", {"name": "no sku"}, timeout=1)
    assert failed.value.code == "update_validator_failed"
    assert (failed.value.update, failed.value.error_type) == ("add", "KeyError")
    assert failed.value.error_message == "'sku'"
    assert "KeyError" in str(failed.value) and "'add'" in str(failed.value)
    assert isinstance(failed.value, UpdateRejected)  # `except UpdateRejected` still catches it
    logged = [r for r in caplog.records if r.name == "runtime.updates"]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert "tests.upd.fussy" in logged[0].getMessage()
    with pytest.raises(UpdateValidatorFailed, match="TypeError"):
        handle.update("add", ["a", "list"], timeout=1)
    with pytest.raises(UpdateRejected, match="not this one; nor that") as django_refusal:
        handle.update("add", "django", timeout=1)  # Django's ValidationError: a plain refusal
    assert type(django_refusal.value) is UpdateRejected
    with pytest.raises(UpdateRejected, match="no X items"):
        handle.update("add", {"sku": "X1"}, timeout=1)
    assert _recorded(run.id) == (0, 0)
    copy = pickle.loads(pickle.dumps(failed.value))
    assert (type(copy), str(copy), copy.error_type) == (
        UpdateValidatorFailed, str(failed.value), "KeyError"
    )  # fmt: skip


def test_updates_validator_failure_then_a_good_update_is_answered(pump: Pump) -> None:
    run = start("tests.upd.fussy")
    handle = get_run(run.id)
    with pytest.raises(UpdateValidatorFailed):
        handle.update("add", None, timeout=5)
    assert handle.update("add", {"sku": "A"}, timeout=10) == {"count": 1}
    # The answer is on the update's row before the run's events about it commit (they follow
    # in the run's next checkpoint): one update recorded, the refused one never.
    wait_until(lambda: _recorded(run.id) == (1, 1), 10, message="the update's receipt recorded")


def test_updates_validator_failure_with_start_starts_nothing(runs: InMemoryDispatcher) -> None:
    with pytest.raises(UpdateValidatorFailed, match="KeyError"):
        start_with_update("tests.upd.fussy", idempotency_key="fussy-1", update=("add", {}))
    assert not Run.objects.filter(idempotency_key="fussy-1").exists()
    assert runs.runs == []


def test_updates_rest_validator_failure_is_422_with_its_type(
    ops: APIClient, runs: InMemoryDispatcher
) -> None:
    run = start("tests.upd.fussy")
    runs.join()
    url = f"/api/runs/{run.id}/updates/"
    failed = ops.post(url, {"name": "add", "payload": {"nope": 1}, "wait": 0.1}, format="json")
    assert failed.status_code == 422, failed.content
    error = failed.json()["error"]
    assert (error["code"], error["type"]) == ("update_validator_failed", "KeyError")
    assert "'sku'" in error["message"]
    typed = ops.post(url, {"name": "add", "payload": 7}, format="json")
    assert (typed.status_code, typed.json()["error"]["type"]) == (422, "TypeError")
    refused = ops.post(url, {"name": "add", "payload": "django"}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "code": "update_rejected",
        "message": "not this one; nor that",
    }
    assert _recorded(run.id) == (0, 0)


def test_updates_rest_update_with_start_validator_failure_starts_nothing(
    ops: APIClient, runs: InMemoryDispatcher
) -> None:
    body = {"workflow": "tests.upd.fussy", "idempotency_key": "fussy-rest",
            "update": {"name": "add", "payload": [1]}}  # fmt: skip
    failed = ops.post("/api/updates/", body, format="json")
    assert (failed.status_code, failed.json()["error"]["type"]) == (422, "TypeError")
    assert not Run.objects.filter(idempotency_key="fussy-rest").exists()


def test_updates_async_validator_is_refused_at_declaration() -> None:
    async def check(payload: Any) -> None:
        return None

    with pytest.raises(TypeError, match="is async"):
        workflow(name="tests.upd.async_validator", updates={"x": check})(lambda ctx: 1)


def test_updates_validator_returning_an_awaitable_fails_the_update(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.upd.sneaky")  # its validator's __call__ is async
    runs.join()
    with pytest.raises(UpdateValidatorFailed, match="awaitable"):
        get_run(run.id).update("x", 1, timeout=1)
    assert _recorded(run.id) == (0, 0)
