"""Django's Tasks framework on Fanfold (docs/django-tasks.md).

`runtime.django_tasks.backend.FanfoldBackend` is the backend; `runtime.django_tasks.runner`
the workflow each task runs as. Neither is imported here: Django's Tasks framework may be
missing (Django 5.2 without the backport), and only a project that configures the backend
needs it. `install()` (called by the runtime app when it is ready) registers the workflow in
such a project, so that every worker knows it. `runtime.django_tasks.steps.step_of` makes a
task's function a step of a workflow.
"""

from __future__ import annotations

import functools
import importlib
from importlib.util import find_spec
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from runtime.dispatch import RunRouting
from runtime.django_tasks.options import BadTaskOptions, TaskOptions
from runtime.registry import registry

BACKEND_PATH = "runtime.django_tasks.backend.FanfoldBackend"


@functools.cache
def configured_aliases() -> tuple[str, ...]:
    """The aliases of settings.TASKS whose backend is Fanfold's (or a subclass of it). Read
    once (each enqueue asks), and again when the setting is changed (override_settings), as
    Django's Tasks framework reads its backends."""
    tasks: Any = getattr(settings, "TASKS", None)
    if not isinstance(tasks, dict):
        return ()
    aliases = []
    for alias, params in tasks.items():
        backend = params.get("BACKEND") if isinstance(params, dict) else None
        if backend == BACKEND_PATH or (isinstance(backend, str) and _is_ours(backend)):
            aliases.append(alias)
    return tuple(aliases)


@receiver(setting_changed)
def _forget_aliases(setting: str, **_: object) -> None:
    if setting == "TASKS":
        configured_aliases.cache_clear()


def _is_ours(path: str) -> bool:
    try:
        found = import_string(path)
    except ImportError:
        return False  # Django reports a backend it cannot import when it is used
    bases = getattr(found, "__mro__", ())
    return any(f"{base.__module__}.{base.__qualname__}" == BACKEND_PATH for base in bases)


def check_options(**kwargs: Any) -> list[checks.CheckMessage]:
    """A system check: each Fanfold Tasks backend's OPTIONS can be used."""
    errors: list[checks.CheckMessage] = []
    for alias in configured_aliases():
        try:
            TaskOptions.parse(alias, settings.TASKS[alias].get("OPTIONS"))
        except BadTaskOptions as exc:
            errors.append(checks.Error(str(exc), id="fanfold.E900"))
    return errors


def install() -> None:
    """Register the tasks' workflow when a TASKS backend is Fanfold's; wherever Django's Tasks
    framework is, let a workflow `ctx.step` or `ctx.map` a task (whatever its backend). The
    runs' routing to their tasks' queues is `run_routing()`, given to the dispatcher."""
    checks.register(check_options)
    if find_spec("django.tasks") is not None or find_spec("django_tasks") is not None:
        steps = importlib.import_module("runtime.django_tasks.steps")
        registry.add_step_source(steps.step_source)
    if configured_aliases():
        importlib.import_module("runtime.django_tasks.runner")


def run_routing() -> RunRouting | None:
    """Where the dispatcher sends a task's run (its task's queue) when a TASKS backend is
    Fanfold's; None otherwise (every run goes to the run queue)."""
    if not configured_aliases():
        return None
    queues = importlib.import_module("runtime.django_tasks.queues")
    route: RunRouting = queues.queue_of
    return route
