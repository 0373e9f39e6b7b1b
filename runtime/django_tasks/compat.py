"""Django's Tasks framework where this Django has it: `django.tasks` on Django 6.x, else the
`django_tasks` backport (Django 5.2, extra `fanfold[tasks]`). Everything else in this package
imports the framework's names from here, so one backend class serves both."""

from __future__ import annotations

from importlib.util import find_spec
from typing import TYPE_CHECKING

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
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
