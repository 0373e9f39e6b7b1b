"""OPTIONS["enqueue_on_commit"] on real PostgreSQL: left out or True, a task enqueued inside
an atomic block is written in it and sent when it commits (a rollback runs nothing); False,
it is written and sent at once, whatever the block then does."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

from runtime.django_tasks.compat import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    default_task_backend,
)
from runtime.models import Run
from tests.support import sample_tasks as tasks
from tests.support.dispatch import Enqueued

BACKEND = "runtime.django_tasks.backend.FanfoldBackend"


class Rollback(Exception):
    pass


def on_commit(settings: Any, value: bool | None) -> None:
    options = {} if value is None else {"enqueue_on_commit": value}
    settings.TASKS = {"default": {"BACKEND": BACKEND, "OPTIONS": options}}


@pytest.mark.parametrize("value", [None, True])
def test_tasks_backend_enqueue_in_a_rolled_back_transaction_runs_nothing(
    settings: Any, enqueued: Enqueued, value: bool | None
) -> None:
    on_commit(settings, value)
    with pytest.raises(Rollback), transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        assert Run.objects.filter(id=result.id).exists()  # written in the caller's transaction
        raise Rollback
    assert Run.objects.count() == 0 and enqueued.calls == []
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result.id)


@pytest.mark.parametrize("value", [None, True])
def test_tasks_backend_enqueue_in_a_transaction_is_sent_when_it_commits(
    settings: Any, enqueued: Enqueued, value: bool | None
) -> None:
    on_commit(settings, value)
    with transaction.atomic():
        result = tasks.add.enqueue(1, 2)
        assert enqueued.calls == []
    assert enqueued.calls == [(uuid.UUID(result.id), None)]


@pytest.mark.parametrize("value", [None, True, False])
def test_tasks_backend_enqueue_outside_a_transaction_is_sent_at_once(
    settings: Any, enqueued: Enqueued, value: bool | None
) -> None:
    on_commit(settings, value)
    result = tasks.add.enqueue(1, 2)
    assert enqueued.calls == [(uuid.UUID(result.id), None)]


def test_tasks_backend_enqueue_on_commit_false_sends_at_once_and_survives_a_rollback(
    settings: Any, enqueued: Enqueued, drive: Callable[[str], str]
) -> None:
    on_commit(settings, False)
    with pytest.raises(Rollback), transaction.atomic():
        result = tasks.add.enqueue(2, 3)
        assert enqueued.calls == [(uuid.UUID(result.id), None)]  # sent before the commit
        raise Rollback
    assert drive(result.id) == "completed"  # the rollback did not take the task with it
    fetched = default_task_backend.get_result(result.id)
    assert (fetched.status, fetched.return_value) == (TaskResultStatus.SUCCESSFUL, 5)
