"""A task's `queue_name` as the Celery queue of its run's messages.

The queue "default" is Fanfold's run queue (FANFOLD_RUN_QUEUE, else Celery's default queue);
any other name is the Celery queue of that name (`celery -A config worker -Q reports`). Every
execution message of the run goes there: the first, the resumes after a retry delay or
`run_after`, the recovery sweep's. The process that enqueued the task or ran it knows the
queue; any other reads it from the run, and only when a Fanfold backend lists other queues.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from runtime.django_tasks import configured_aliases
from runtime.django_tasks.results import TASK_META_KEY, TASK_WORKFLOW
from runtime.store.runs.django_tasks import task_queue_name

DEFAULT_QUEUE = "default"
_REMEMBERED = 10_000

_lock = threading.Lock()
_known: OrderedDict[uuid.UUID, str | None] = OrderedDict()


def celery_queue(queue_name: str | None) -> str | None:
    """The Celery queue of a task queue; None for the default one (the run queue)."""
    return None if queue_name in (None, DEFAULT_QUEUE) else queue_name


def remember(run_id: uuid.UUID, queue_name: str | None) -> None:
    """Note the queue of a task's run in this process."""
    with _lock:
        _known[run_id] = celery_queue(queue_name)
        _known.move_to_end(run_id)
        while len(_known) > _REMEMBERED:
            _known.popitem(last=False)


def queue_of(run_id: uuid.UUID) -> str | None:
    """The Celery queue of `run_id`'s messages if it is a task's run on a named queue."""
    with _lock:
        if run_id in _known:
            return _known[run_id]
    if not named_queues():
        return None
    queue = celery_queue(task_queue_name(run_id, TASK_WORKFLOW, TASK_META_KEY))
    remember(run_id, queue)
    return queue


@functools.cache
def named_queues() -> bool:
    """Whether a Fanfold Tasks backend lists a queue besides "default" (read once, and again
    when settings.TASKS is changed)."""
    tasks: Any = getattr(settings, "TASKS", {})
    return any(
        set(tasks[alias].get("QUEUES", [DEFAULT_QUEUE])) - {DEFAULT_QUEUE}
        for alias in configured_aliases()
    )


@receiver(setting_changed)
def _forget_named_queues(setting: str, **_: object) -> None:
    if setting == "TASKS":
        named_queues.cache_clear()
