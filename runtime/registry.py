"""`@workflow`, `@step`, signatures and the registry that finds them by name."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar, Generic, Literal, ParamSpec, TypeVar, overload

from runtime.core.durations import parse_duration
from runtime.core.errors import InvalidArguments, RegistrationError, WorkflowNotFound
from runtime.core.identity import check_name
from runtime.core.rates import Rate, parse_rate
from runtime.core.retry import DEFAULT_POLICY, RetryPolicy
from runtime.core.schedule import CatchUp, Schedule, as_schedule, check_catchup

P = ParamSpec("P")
R = TypeVar("R")


def _default_name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


@dataclass(frozen=True, slots=True)
class Signature:
    """A call of a registered step or workflow, to be fanned out (`ctx.all`)."""

    name: str
    kind: str  # "step" or "child"
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SignatureMap:
    """`ctx.map`'s signatures, one per item of the same step or workflow, made only when
    iterated: a replay of a recorded fan-out checks one name and kind, not N signatures."""

    name: str
    kind: str  # "step" or "child"
    items: list[Any]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Signature]:
        return (Signature(self.name, self.kind, (item,)) for item in self.items)


class StepFunction(Generic[P, R]):
    """A function registered as a step. Calling it runs the body directly, not durably."""

    signature_kind: ClassVar[str] = "step"

    def __init__(
        self,
        fn: Callable[P, R],
        name: str,
        retry: RetryPolicy | None,
        at_most_once: bool,
        rate_limit: Rate | None = None,
        timeout: float | None = None,
    ) -> None:
        self.fn = fn
        self.name = name
        self.retry = retry
        self.at_most_once = at_most_once
        self.rate_limit = rate_limit  # global across workers (runtime.flow.ratelimit)
        self.timeout = timeout  # seconds an async body may run (runtime.eventloop.bounded)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A signature of this step for `ctx.all`."""
        return Signature(self.name, self.signature_kind, args, kwargs)

    def __repr__(self) -> str:
        return f"<step {self.name}>"


def step_policy(fn: StepFunction[Any, Any] | None) -> RetryPolicy:
    """The retry policy of a step: its own, else the default (3 attempts, backoff, jitter)."""
    return (fn.retry if fn is not None else None) or DEFAULT_POLICY


OnLimit = Literal["queue", "skip", "cancel_running"]
ON_LIMIT_POLICIES: tuple[str, ...] = ("queue", "skip", "cancel_running")


@dataclass(frozen=True)
class FlowOptions:
    """A workflow's flow control: its schedule and catch-up policy, its concurrency limit."""

    schedule: Schedule | None = None
    catchup: CatchUp = "skip"
    concurrency: int | None = None
    # What a start does when the limit is reached: wait its turn, end at once as cancelled
    # (reason "skipped"), or cancel the running runs of its key and take their place.
    on_limit: OnLimit = "queue"

    @classmethod
    def checked(
        cls, schedule: object, catchup: object, concurrency: object, on_limit: object = "queue"
    ) -> FlowOptions:
        if concurrency is not None and (
            not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1
        ):
            raise ValueError(
                f"workflow(concurrency=...) must be a positive int, not {concurrency!r}"
            )
        if on_limit not in ON_LIMIT_POLICIES:
            raise ValueError(
                f"workflow(on_limit=...) must be one of {', '.join(ON_LIMIT_POLICIES)}, "
                f"not {on_limit!r}"
            )
        if on_limit != "queue" and concurrency is None:
            raise ValueError("workflow(on_limit=...) needs a concurrency=N limit")
        sched = None if schedule is None else as_schedule(schedule)
        return cls(sched, check_catchup(catchup), concurrency, on_limit)  # type: ignore[arg-type]


class WorkflowFunction(Generic[R]):
    """A function registered as a workflow; its first parameter is the durable context."""

    signature_kind: ClassVar[str] = "child"  # fanned out, it runs as a child workflow
    # How long its finished runs are kept (runtime.lifecycle); None: FANFOLD_RETENTION.
    retention: timedelta | None = None

    def __init__(
        self,
        fn: Callable[..., R],
        name: str,
        flow: FlowOptions | None = None,
        start_permission: str | None = None,
    ) -> None:
        self.fn = fn
        self.name = name
        self.flow = flow or FlowOptions()
        # A Django permission ("app_label.codename") needed, besides runtime.add_run, to start
        # this workflow through the API or the admin (runtime.access).
        self.start_permission = start_permission
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> R:
        return self.fn(*args, **kwargs)

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A child-workflow signature for `ctx.all`."""
        return Signature(self.name, self.signature_kind, args, kwargs)

    def check_arguments(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Raise InvalidArguments if these would not bind to the workflow's parameters."""
        try:
            inspect.signature(self.fn).bind(None, *args, **kwargs)
        except TypeError as exc:
            raise InvalidArguments(f"arguments do not fit workflow {self.name!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"<workflow {self.name}>"


class Registry:
    """Workflows and steps by name. A clash of names is an error when the second registers."""

    def __init__(self) -> None:
        self.workflows: dict[str, WorkflowFunction[Any]] = {}
        self.steps: dict[str, StepFunction[Any, Any]] = {}

    def _check_clash(
        self, table: dict[str, Any], name: str, fn: Callable[..., Any], what: str
    ) -> bool:
        existing = table.get(name)
        if existing is None:
            return False
        same = _default_name(existing.fn) == _default_name(fn)
        if same:  # the same function imported twice (e.g. by two import paths) is no clash
            return True
        raise RegistrationError(
            f"{what} name {name!r} is registered twice: by {_default_name(existing.fn)} "
            f"and by {_default_name(fn)}; names must be unique"
        )

    def add_workflow(self, wf: WorkflowFunction[Any]) -> None:
        if not self._check_clash(self.workflows, wf.name, wf.fn, "workflow"):
            self.workflows[wf.name] = wf

    def add_step(self, st: StepFunction[Any, Any]) -> None:
        if not self._check_clash(self.steps, st.name, st.fn, "step"):
            self.steps[st.name] = st

    def workflow(self, name_or_fn: str | WorkflowFunction[Any]) -> WorkflowFunction[Any]:
        if isinstance(name_or_fn, WorkflowFunction):
            return self.workflows.get(name_or_fn.name, name_or_fn)
        try:
            return self.workflows[name_or_fn]
        except KeyError:
            raise WorkflowNotFound(f"no workflow is registered as {name_or_fn!r}") from None

    def step(self, name: str) -> StepFunction[Any, Any]:
        try:
            return self.steps[name]
        except KeyError:
            raise WorkflowNotFound(f"no step is registered as {name!r}") from None


registry = Registry()


def _positive_seconds(value: object, what: str) -> float:
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise ValueError(f"{what} takes a positive number of seconds or a timedelta")
    return float(seconds)


def _refuse_generators(fn: Callable[..., Any], what: str) -> None:
    # A generator's values cannot be recorded one by one: refused when decorated, not when run.
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"@{what} cannot decorate a generator function ({_default_name(fn)}): return a "
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
                f"step(timeout=...) bounds async steps; {_default_name(f)} is a sync function "
                "(use Celery's time limits for sync code)"
            )
        st: StepFunction[P, R] = StepFunction(
            f, check_name(name or _default_name(f), "step"), retry, at_most_once, rate, bound
        )
        registry.add_step(st)
        return st

    return register(fn) if fn is not None else register


@overload
def workflow(fn: Callable[..., R], /) -> WorkflowFunction[R]: ...


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
) -> Callable[[Callable[..., R]], WorkflowFunction[R]]: ...


def workflow(
    fn: Callable[..., R] | None = None,
    /,
    *,
    name: str | None = None,
    schedule: Schedule | timedelta | None = None,
    catchup: CatchUp = "skip",
    concurrency: int | None = None,
    retention: timedelta | str | None = None,
    start_permission: str | None = None,
    on_limit: OnLimit = "queue",
) -> WorkflowFunction[R] | Callable[[Callable[..., R]], WorkflowFunction[R]]:
    """Register a workflow: ordinary Python whose first argument is the durable context.

    `schedule=Cron(...)` or a timedelta starts a run per tick (`catchup` says what happens to
    ticks missed while no worker ran); `concurrency=N` lets at most N runs execute at once
    (per `concurrency_key` given at start); `on_limit` says what a start does when they run:
    "queue" (wait its turn), "skip" (end at once, cancelled with reason "skipped") or
    "cancel_running" (cancel the running runs of its key and take their place).
    `start_permission="app.codename"` is a Django permission a user needs, besides
    `runtime.add_run`, to start it through the API or admin. `retention=` (a timedelta or text
    such as "7d") is how long its finished runs are kept; None keeps them for FANFOLD_RETENTION.
    """
    flow = FlowOptions.checked(schedule, catchup, concurrency, on_limit)
    if start_permission is not None and (
        not isinstance(start_permission, str) or start_permission.count(".") != 1
    ):
        raise ValueError(
            f'workflow(start_permission=...) must be "app_label.codename", not {start_permission!r}'
        )
    keep = None if retention is None else parse_duration(retention)

    def register(f: Callable[..., R]) -> WorkflowFunction[R]:
        if not callable(f):
            raise TypeError("@workflow decorates a function")
        _refuse_generators(f, "workflow")
        wf_name = check_name(name or _default_name(f), "workflow")
        wf = WorkflowFunction(f, wf_name, flow, start_permission)
        wf.retention = keep
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
