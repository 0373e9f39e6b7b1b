"""What the decorators make: step and workflow functions, and the signatures that fan them out.

A `StepFunction` or `WorkflowFunction` wraps the user's function with its name and options;
calling it runs the function directly, `.s(...)` makes a `Signature` for `ctx.all`, and
`ctx.map` makes a `SignatureMap`. Registering them by name is runtime.registry.table's job.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any, ClassVar, Concatenate, Generic, Literal, ParamSpec, TypeVar, overload

from runtime.core.errors import InvalidArguments
from runtime.core.identity import check_name
from runtime.core.rates import Rate
from runtime.core.retry import DEFAULT_POLICY, RetryPolicy
from runtime.core.schedule import CatchUp, Schedule, as_schedule, check_catchup

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
R_co = TypeVar("R_co", covariant=True)  # what a step or workflow returns


# A validator of an update's payload: returns normally to accept it, raises ValueError,
# Django's ValidationError or UpdateRejected to refuse it (runtime.updates runs it in the
# caller's process; anything else it raises refuses it as UpdateValidatorFailed).
UpdateValidator = Callable[[Any], object]


def declared_updates(
    updates: Mapping[str, UpdateValidator | None] | None,
) -> Mapping[str, UpdateValidator | None]:
    """`@workflow(updates=...)` checked: names as stored, each with a callable or None."""
    if updates is None:
        return MappingProxyType({})
    if not isinstance(updates, Mapping):
        raise TypeError("workflow(updates=...) takes a dict of update name to validator or None")
    for name, validator in updates.items():
        check_name(name, "update")
        if validator is not None and not callable(validator):
            raise TypeError(f"the validator of update {name!r} must be callable or None")
        if inspect.iscoroutinefunction(validator):
            raise TypeError(
                f"the validator of update {name!r} is async: validators run in the caller's "
                "process before anything is recorded and must be plain functions"
            )
    return MappingProxyType(dict(updates))


def default_name(fn: Callable[..., Any]) -> str:
    """The name a step or workflow gets when none is given: `<module>.<qualname>`."""
    return f"{fn.__module__}.{fn.__qualname__}"


@dataclass(frozen=True, slots=True)
class Signature(Generic[T_co]):
    """A call of a registered step or workflow, to be fanned out (`ctx.all`): its branch's
    result is a `T_co` (what `.s(...)` of a step or workflow returning one makes)."""

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


class StepFunction(Generic[P, R_co]):
    """A function registered as a step. Calling it runs the body directly, not durably."""

    signature_kind: ClassVar[str] = "step"

    def __init__(
        self,
        fn: Callable[P, R_co],
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

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        return self.fn(*args, **kwargs)

    @overload
    def s(
        self: StepFunction[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs
    ) -> Signature[T]: ...

    @overload
    def s(self: StepFunction[P, T], *args: P.args, **kwargs: P.kwargs) -> Signature[T]: ...

    def s(self, *args: Any, **kwargs: Any) -> Signature[Any]:
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


class WorkflowFunction(Generic[P, R_co]):
    """A function registered as a workflow; its first parameter is the durable context, `P`
    the parameters after it (what `start` and `.s(...)` take), `R_co` what it returns."""

    signature_kind: ClassVar[str] = "child"  # fanned out, it runs as a child workflow
    # How long its finished runs are kept (runtime.lifecycle); None: FANFOLD_RETENTION.
    retention: timedelta | None = None
    # The updates its runs accept, each with its validator or None (contract section 2l).
    updates: Mapping[str, UpdateValidator | None] = MappingProxyType({})
    # Its search attributes, name to kind (runtime.core.search): none unless declared.
    search: dict[str, str] = {}

    def __init__(
        self,
        fn: Callable[Concatenate[Any, P], R_co],
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

    def __call__(self, ctx: Any, /, *args: P.args, **kwargs: P.kwargs) -> R_co:
        return self.fn(ctx, *args, **kwargs)

    @overload
    def s(
        self: WorkflowFunction[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs
    ) -> Signature[T]: ...

    @overload
    def s(self: WorkflowFunction[P, T], *args: P.args, **kwargs: P.kwargs) -> Signature[T]: ...

    def s(self, *args: Any, **kwargs: Any) -> Signature[Any]:
        """A child-workflow signature for `ctx.all`."""
        return Signature(self.name, self.signature_kind, args, kwargs)

    def check_arguments(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Raise InvalidArguments if these would not bind to the workflow's parameters."""
        signature = self.__dict__.get("_signature")
        if signature is None:  # read once: inspecting it costs more than binding
            signature = self.__dict__["_signature"] = inspect.signature(self.fn)
        try:
            signature.bind(None, *args, **kwargs)
        except TypeError as exc:
            raise InvalidArguments(f"arguments do not fit workflow {self.name!r}: {exc}") from None

    def __repr__(self) -> str:
        return f"<workflow {self.name}>"
