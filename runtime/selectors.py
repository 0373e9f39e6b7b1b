"""Read-side services for the API and the admin: runs, their steps, events and workflows."""

from __future__ import annotations

import dataclasses
import inspect
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from runtime.core.schedule import describe
from runtime.core.waiting import OpenStep, Waiting, waiting_for
from runtime.models import Event, FanoutGroup, Run, RunStatus, Step, StepStatus, values
from runtime.registry import WorkflowFunction, registry
from runtime.services import get_run_row
from runtime.store.replica import lagging_reads as lagging_reads  # reads that may lag
from runtime.store.runs.search_rows import attributes_of


def every_run() -> QuerySet[Run]:
    """Every run, unordered: the start of a query that filters (runtime.run_queries)."""
    return Run.objects.all()


def active_user(username: str) -> Any:
    """The active user of this username, or None."""
    users = get_user_model()._default_manager
    return users.filter(username=username, is_active=True).first()


def search_attributes(run_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
    """The search attributes of these runs, {run id: {name: value}} (values in JSON form)."""
    return attributes_of(run_ids)


def step_counts(run_id: uuid.UUID) -> dict[str, int]:
    """How many of the run's steps are in each status (every status, zeros included)."""
    return {
        **dict.fromkeys(values(StepStatus), 0),
        **Step.objects.filter(run_id=run_id).counts_by_status(),
    }


def run_steps(run_id: uuid.UUID | str) -> QuerySet[Step]:
    """The steps of an existing run, by position; raises RunNotFound."""
    run = get_run_row(run_id)
    return Step.objects.filter(run_id=run.id).order_by("position")


def run_events(run_id: uuid.UUID | str) -> QuerySet[Event]:
    """The event log of an existing run, by seq; raises RunNotFound."""
    run = get_run_row(run_id)
    return Event.objects.filter(run_id=run.id).order_by("seq")


def run_status(run_id: uuid.UUID) -> str:
    """The run's status now; Run.DoesNotExist if there is no such run."""
    return str(Run.objects.filter(id=run_id).values_list("status", flat=True).get())


def waiting_on(run_id: uuid.UUID) -> Waiting | None:
    """What run `run_id` waits for while it is suspended (None when it is not)."""
    run = get_run_row(run_id)
    if run.status != RunStatus.WAITING:
        return None
    groups = FanoutGroup.objects.filter(run_id=run_id, verdict__isnull=True)
    spans = [
        (first, first + total) for first, total in groups.values_list("first_position", "total")
    ]
    rows = Step.objects.filter(
        run_id=run_id, status__in=(StepStatus.PENDING, StepStatus.RUNNING)
    ).values_list("position", "kind", "name", "wake_at", "input")
    open_steps = [
        OpenStep(p, kind, name, wake, given, branch=any(a <= p < b for a, b in spans))
        for p, kind, name, wake, given in rows
    ]
    return waiting_for(open_steps, run.wake_at)


def steps_of(run_id: uuid.UUID) -> list[Step]:
    """The run's step records by position (none for an unknown run)."""
    return list(Step.objects.filter(run_id=run_id).order_by("position"))


def events_of(run_id: uuid.UUID, after: int = 0) -> list[Event]:
    """The run's events after seq `after`, in order (none for an unknown run)."""
    return list(Event.objects.filter(run_id=run_id, seq__gt=after).order_by("seq"))


def fork_ids(run: Run) -> list[uuid.UUID]:
    """The ids of the runs forked from `run`, oldest first."""
    return list(run.forks.order_by("created_at").values_list("id", flat=True))


def callback_step(run_id: uuid.UUID | str, name: str | None = None) -> Step:
    """The run's callback step (the one named `name`, if it has several); Step.DoesNotExist
    or MultipleObjectsReturned if that does not single one out."""
    steps = Step.objects.filter(run_id=run_id, kind="callback")
    if name is not None:
        steps = steps.filter(name=name)
    return steps.get()


def runs_to_replay(
    *,
    workflow: str | None = None,
    statuses: list[str] | None = None,
    run_ids: list[uuid.UUID] | None = None,
    limit: int | None = None,
) -> QuerySet[Run]:
    """The runs `fanfold replay` checks, newest first, with only what a replay reads."""
    runs = Run.objects.order_by("-created_at").only("id", "workflow", "status", "input")
    if workflow:
        runs = runs.filter(workflow=workflow)
    if statuses:
        runs = runs.filter(status__in=statuses)
    if run_ids:
        runs = runs.filter(id__in=run_ids)
    if limit is not None:
        runs = runs[: max(limit, 0)]
    return runs


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str  # "positional", "keyword", "var_positional", "var_keyword"
    required: bool


@dataclass(frozen=True)
class WorkflowInfo:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    # Flow control: {"kind", "expression", "timezone", "catchup"} or None; `concurrency=N`.
    schedule: dict[str, str] | None = None
    concurrency: int | None = None
    # Its search attributes, name to type ("int", "str", "float", "bool", "datetime").
    search: dict[str, str] = dataclasses.field(default_factory=dict)


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def registered_workflows() -> list[WorkflowInfo]:
    """Every registered workflow with its parameters (after the context), sorted by name."""
    return [
        replace(
            _describe(name, wf.fn),
            schedule=_schedule(wf),
            concurrency=wf.flow.concurrency,
            search=dict(wf.search),
        )
        for name, wf in sorted(registry.workflows.items())
    ]


def _schedule(wf: WorkflowFunction[..., Any]) -> dict[str, str] | None:
    if wf.flow.schedule is None:
        return None
    kind, expression, tz = describe(wf.flow.schedule)
    return {"kind": kind, "expression": expression, "timezone": tz, "catchup": wf.flow.catchup}


def _describe(name: str, fn: Any) -> WorkflowInfo:
    params = list(inspect.signature(fn).parameters.values())[1:]  # the first is ctx
    described = tuple(
        Parameter(
            p.name,
            _KINDS[p.kind],
            p.default is inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD),
        )
        for p in params
    )
    doc = inspect.getdoc(fn) or ""
    return WorkflowInfo(name, doc.split("\n\n")[0].strip(), described)
