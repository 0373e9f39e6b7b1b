"""`@step` and `@workflow`: check a function and its options, then register it by name."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

from runtime.core.durations import parse_duration
from runtime.core.errors import InvalidArguments
from runtime.core.identity import check_name
from runtime.core.rates import parse_rate
from runtime.core.retry import RetryPolicy
from runtime.core.schedule import CatchUp, Schedule
from runtime.core.search import declaration
from runtime.registry.functions import (
    FlowOptions,
    OnLimit,
    StepFunction,
    UpdateValidator,
    WorkflowFunction,
    declared_updates,
    default_name,
)
from runtime.registry.table import registry

P = ParamSpec("P")
R = TypeVar("R")


def _positive_seconds(value: object, what: str) -> float:
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ValueError(f"{what} takes a positive number of seconds or a timedelta")
    return float(seconds)


def _refuse_generators(fn: Callable[..., Any], what: str) -> None:
    # A generator's values cannot be recorded one by one: refused when decorated, not when run.
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"@{what} cannot decorate a generator function ({default_name(fn)}): return a "
            "list, or write to a stream (runtime.stream) for values made along the way"
        )


@overload
def step(fn: Callable[P, R], /) -> StepFunction[P, R]: ...


@overload
def step(
    *,
    name: str | None = None,
    retry: RetryPolicy | None = None,
    at_most_once: bool = False,
    rate_limit: str | None = None,
    timeout: float | timedelta | None = None,
) -> Callable[[Callable[P, R]], StepFunction[P, R]]: ...


def step(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    retry: RetryPolicy | None = None,
    at_most_once: bool = False,
    rate_limit: str | None = None,
    timeout: float | timedelta | None = None,
) -> StepFunction[P, R] | Callable[[Callable[P, R]], StepFunction[P, R]]:
    """Register a step. Works bare (`@step`) or with options (`@step(retry=...)`).

    The name defaults to `<module>.<qualname>`. `retry` overrides the default RetryPolicy;
    `at_most_once=True` records the start before the body runs and never re-runs an
    interrupted attempt. `rate_limit="N/s|m|h"` spaces body starts across every worker.
    `timeout` (seconds or a timedelta) bounds each attempt of an `async def` step: the body is
    cancelled and the attempt fails with StepTimedOut, retried by the policy. A sync body
    cannot be interrupted safely, so `timeout` on a sync step is refused.
    """
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise TypeError("step(retry=...) takes a RetryPolicy")
    rate = None if rate_limit is None else parse_rate(rate_limit)
    bound = None if timeout is None else _positive_seconds(timeout, "step(timeout=...)")

    def register(f: Callable[P, R]) -> StepFunction[P, R]:
        if not callable(f):
            raise TypeError("@step decorates a function")
        _refuse_generators(f, "step")
        if bound is not None and not inspect.iscoroutinefunction(f):
            raise TypeError(
                f"step(timeout=...) bounds async steps; {default_name(f)} is a sync function "
                "(use Celery's time limits for sync code)"
            )
        st: StepFunction[P, R] = StepFunction(
            f, check_name(name or default_name(f), "step"), retry, at_most_once, rate, bound
        )
        registry.add_step(st)
        return st

    return register(fn) if fn is not None else register


@overload
def workflow(fn: Callable[Concatenate[Any, P], R], /) -> WorkflowFunction[P, R]: ...


@overload
def workflow(
    *,
    name: str | None = None,
    schedule: Schedule | timedelta | None = None,
    catchup: CatchUp = "skip",
    concurrency: int | None = None,
    retention: timedelta | str | None = None,
    start_permission: str | None = None,
    on_limit: OnLimit = "queue",
    updates: Mapping[str, UpdateValidator | None] | None = None,
    search: dict[str, type] | None = None,
) -> Callable[[Callable[Concatenate[Any, P], R]], WorkflowFunction[P, R]]: ...


def workflow(
    fn: Callable[Concatenate[Any, P], R] | None = None,
    /,
    *,
    name: str | None = None,
    schedule: Schedule | timedelta | None = None,
    catchup: CatchUp = "skip",
    concurrency: int | None = None,
    retention: timedelta | str | None = None,
    start_permission: str | None = None,
    on_limit: OnLimit = "queue",
    updates: Mapping[str, UpdateValidator | None] | None = None,
    search: dict[str, type] | None = None,
) -> WorkflowFunction[P, R] | Callable[[Callable[Concatenate[Any, P], R]], WorkflowFunction[P, R]]:
    """Register a workflow: ordinary Python whose first argument is the durable context.

    `schedule=Cron(...)` or a timedelta starts a run per tick (`catchup` says what happens to
    ticks missed while no worker ran); `concurrency=N` lets at most N runs execute at once
    (per `concurrency_key` given at start); `on_limit` says what a start does when they run:
    "queue" (wait its turn), "skip" (end at once, cancelled with reason "skipped") or
    "cancel_running" (cancel the running runs of its key and take their place).
    `start_permission="app.codename"` is a Django permission a user needs, besides
    `runtime.add_run`, to start it through the API or admin. `retention=` (a timedelta or text
    such as "7d") is how long its finished runs are kept; None keeps them for FANFOLD_RETENTION.
    `updates={"name": validator_or_None}` declares the updates its runs accept
    (`ctx.next_update`); a validator runs in the caller's process before anything is recorded
    and refuses the update by raising ValueError or UpdateRejected.
    `search={"customer": int, ...}` declares the run's search attributes (int, str, float, bool
    or datetime), set by `start(..., search=...)` and `ctx.set_search` and queried by
    `list_runs` (docs/finding-runs.md).
    """
    flow = FlowOptions.checked(schedule, catchup, concurrency, on_limit)
    _check_permission_name(start_permission)
    keep = None if retention is None else parse_duration(retention)
    declared = declared_updates(updates)
    declared_search = declaration(search)

    def register(f: Callable[Concatenate[Any, P], R]) -> WorkflowFunction[P, R]:
        if not callable(f):
            raise TypeError("@workflow decorates a function")
        _refuse_generators(f, "workflow")
        wf_name = check_name(name or default_name(f), "workflow")
        wf = WorkflowFunction(f, wf_name, flow, start_permission)
        wf.retention = keep
        wf.updates = declared
        wf.search = declared_search
        if flow.schedule is not None:  # a tick starts it with no arguments
            try:
                wf.check_arguments([], {})
            except InvalidArguments:
                raise TypeError(
                    f"scheduled workflow {wf.name!r} must take no arguments besides ctx"
                ) from None
        registry.add_workflow(wf)
        return wf

    return register(fn) if fn is not None else register


def _check_permission_name(start_permission: str | None) -> None:
    if start_permission is not None and (
        not isinstance(start_permission, str) or start_permission.count(".") != 1
    ):
        raise ValueError(
            f'workflow(start_permission=...) must be "app_label.codename", not {start_permission!r}'
        )
