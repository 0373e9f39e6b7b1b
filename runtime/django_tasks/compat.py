"""Django's Tasks framework where this Django has it: `django.tasks` on Django 6.x, else the
`django_tasks` backport (Django 5.2, extra `fanfold[tasks]`). Everything else in this package
imports the framework's names from here, so one backend class serves both."""

from __future__ import annotations

from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

# Type checkers read django.tasks (django-stubs has it); the backport has the same names.
if TYPE_CHECKING or find_spec("django.tasks") is not None:
    from django.tasks import default_task_backend, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import (
        DEFAULT_TASK_PRIORITY,
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
        task,
    )
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json

    FRAMEWORK = "django.tasks"
elif find_spec("django_tasks") is not None:
    from django_tasks import default_task_backend, task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import (
        DEFAULT_TASK_PRIORITY,
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
        task,
    )
    from django_tasks.exceptions import (
        InvalidTaskError as InvalidTask,
    )
    from django_tasks.exceptions import (
        TaskResultDoesNotExist,
    )
    from django_tasks.signals import (
        task_enqueued,
        task_finished,
        task_started,
    )
    from django_tasks.utils import normalize_json

    FRAMEWORK = "django_tasks"
else:
    raise ImproperlyConfigured(
        "Fanfold's Tasks backend needs Django's Tasks framework: Django 6.0 or later, or on "
        "Django 5.2 the backport (pip install 'fanfold[tasks]')"
    )


def set_return_value(result: TaskResult[Any, Any], value: Any) -> None:
    """Give a (frozen) TaskResult its return value: `return_value` reads it once the status is
    SUCCESSFUL. Django's backends set the private field themselves and the framework offers no
    public way, so this is the one place Fanfold writes it (the Django releases that keep it
    there are pinned in tests/unit/tasks_backend/test_tasks_backend_compat.py)."""
    object.__setattr__(result, "_return_value", value)


__all__ = [
    "DEFAULT_TASK_PRIORITY",
    "FRAMEWORK",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "default_task_backend",
    "normalize_json",
    "set_return_value",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
