"""The one write of a Django-private name (`TaskResult._return_value`, runtime.django_tasks
.compat): pinned to the Django releases Fanfold supports, and checked to be what Django's
public `return_value` reads."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import django

from runtime.django_tasks.compat import (
    FRAMEWORK,
    TaskResult,
    TaskResultStatus,
    set_return_value,
)
from tests.support import sample_tasks as tasks

RETURN_VALUE_FIELD = "_return_value"

# Django releases whose Tasks framework (built in, or the backport on 5.2) was checked to keep
# a TaskResult's return value in the private field set_return_value writes. A new release
# fails here until it is checked and added (pyproject's Django range must not run ahead).
SUPPORTED_DJANGO = {(5, 2): "django_tasks", (6, 0): "django.tasks", (6, 1): "django.tasks"}


def _result(status: TaskResultStatus) -> TaskResult:
    now = datetime.now(UTC)
    return TaskResult(
        task=tasks.add,
        id="r-1",
        status=status,
        enqueued_at=now,
        started_at=now,
        finished_at=now,
        last_attempted_at=now,
        args=[1, 2],
        kwargs={},
        backend="default",
        errors=[],
        worker_ids=["w"],
    )


def test_tasks_backend_compat_runs_on_a_supported_django_release() -> None:
    assert SUPPORTED_DJANGO.get(django.VERSION[:2]) == FRAMEWORK, (django.VERSION, FRAMEWORK)


def test_tasks_backend_compat_return_value_is_the_private_field_django_reads() -> None:
    fields = {f.name: f for f in dataclasses.fields(TaskResult)}
    assert RETURN_VALUE_FIELD in fields and not fields[RETURN_VALUE_FIELD].init
    result = _result(TaskResultStatus.SUCCESSFUL)
    set_return_value(result, {"total": 3})
    assert result.return_value == {"total": 3}
    assert getattr(result, RETURN_VALUE_FIELD) == {"total": 3}
