"""The rules: a user sees and acts on the runs they own; Django's model permissions grant more.

- `runtime.add_run`: start runs at all (and a workflow's own `start_permission`, if any);
- `runtime.view_run`: see every run (`runtime.change_run` implies it, as in Django's admin);
- `runtime.change_run`: cancel, fork and retry any run;
- `runtime.change_schedule`: pause and resume schedules.

Staff status grants nothing here. A run a user may not see is "not found" (RunNotFound, a
404), never "forbidden": its existence is not disclosed. A run they may see but not change
raises NotPermitted (a 403).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from runtime.core.errors import NotPermitted, RunNotFound
from runtime.models import Run
from runtime.registry import WorkflowFunction, registry
from runtime.services import get_run_row

ADD_RUN = "runtime.add_run"
VIEW_RUN = "runtime.view_run"
CHANGE_RUN = "runtime.change_run"
CHANGE_SCHEDULE = "runtime.change_schedule"


def _active(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active)


def sees_every_run(user: Any) -> bool:
    """Whether `user` may see every run, not only their own."""
    return _active(user) and (user.has_perm(VIEW_RUN) or user.has_perm(CHANGE_RUN))


def visible_runs(user: Any, runs: QuerySet[Run] | None = None) -> QuerySet[Run]:
    """The runs (of `runs`, default all) that `user` may see."""
    runs = Run.objects.all() if runs is None else runs
    if not _active(user):
        return runs.none()
    if sees_every_run(user):
        return runs
    return runs.filter(owner_id=user.pk)


def can_see(user: Any, run: Run) -> bool:
    """Whether `user` may see `run` (its steps, events, streams and callbacks too)."""
    return _active(user) and (run.owner_id == user.pk or sees_every_run(user))


def can_change(user: Any, run: Run) -> bool:
    """Whether `user` may cancel, fork or retry `run`."""
    return _active(user) and (run.owner_id == user.pk or user.has_perm(CHANGE_RUN))


def visible_run(user: Any, run_id: uuid.UUID | str) -> Run:
    """The run `run_id` if `user` may see it; RunNotFound otherwise (as for no such run)."""
    run = get_run_row(run_id)
    if not can_see(user, run):
        raise RunNotFound(f"no run {run.id}")
    return run


def run_to_change(
    user: Any, run_id: uuid.UUID | str, action: str = "cancelling, forking or retrying"
) -> Run:
    """The run `run_id` if `user` may act on it; RunNotFound if they may not even see it,
    NotPermitted (naming `action`, what the user tried) if they may see it only."""
    run = visible_run(user, run_id)
    if not can_change(user, run):
        raise NotPermitted(
            f"{action} run {run.id} needs its owner or {CHANGE_RUN}",
        )
    return run


def check_start(
    user: Any, workflow: str | WorkflowFunction[..., Any]
) -> WorkflowFunction[..., Any]:
    """The workflow if `user` may start it (`runtime.add_run` and the workflow's own
    `start_permission`); NotPermitted otherwise, WorkflowNotFound for an unknown name."""
    if not (_active(user) and user.has_perm(ADD_RUN)):
        raise NotPermitted(f"starting runs needs {ADD_RUN}")
    wf = registry.workflow(workflow)
    if wf.start_permission and not user.has_perm(wf.start_permission):
        raise NotPermitted(f"starting {wf.name!r} needs {wf.start_permission}")
    return wf


def check_schedule_change(user: Any) -> None:
    """NotPermitted unless `user` may pause and resume schedules."""
    if not (_active(user) and user.has_perm(CHANGE_SCHEDULE)):
        raise NotPermitted(f"pausing and resuming schedules needs {CHANGE_SCHEDULE}")
