"""Step and workflow stand-ins of a test environment, and the log of every body call.

`StepMocks` sits in front of every step body (inline steps, fan-out branches, condition polls;
sync or async): it logs each attempt's arguments and, for a mocked step, runs the mock in the
body's place, so the history records the mock's result and a raising mock is retried by the
step's own policy. `WorkflowMocks` replaces a child workflow's function by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from runtime.durable.body import BodyCall
from runtime.registry import StepFunction, WorkflowFunction
from runtime.registry.functions import default_name

UNSET: Any = object()  # "not given" for the keyword options


@dataclass(frozen=True)
class Target:
    """Which bodies a mock or a `calls` query means: by registered name, or by function."""

    names: frozenset[str]
    fns: tuple[Callable[..., Any], ...] = ()

    def matches(self, name: str, fn: Callable[..., Any]) -> bool:
        return name in self.names or any(fn is known for known in self.fns)


def target_of(what: Any) -> Target:
    """The `Target` of a step, a workflow, a Django task, a plain function or a name."""
    if isinstance(what, str):
        return Target(frozenset({what}))
    if isinstance(what, StepFunction | WorkflowFunction):
        return Target(frozenset({what.name}), (what.fn, what))
    if hasattr(what, "module_path") and callable(getattr(what, "func", None)):  # a Django task
        return Target(frozenset({what.module_path}), (what.func,))
    if callable(what):
        return Target(frozenset({default_name(what)}), (what,))
    raise TypeError(f"expected a step, a workflow, a Django task or a name, not {what!r}")


class Outcome:
    """What a mock does when called: return a value, raise, or call `side_effect`.

    `side_effect` may be a function (called with the body's arguments) or an iterable whose
    items are used one per call: an exception (class or instance) is raised, anything else
    returned."""

    def __init__(self, returns: Any, raises: Any, side_effect: Any) -> None:
        given = sum(x is not UNSET for x in (returns, raises, side_effect))
        if given != 1:
            raise TypeError("give exactly one of returns=, raises= or side_effect=")
        self.returns, self.raises = returns, raises
        self.effect: Callable[..., Any] | None = None
        self.items: Iterator[Any] | None = None
        if callable(side_effect):
            self.effect = side_effect
        elif side_effect is not UNSET:
            if not isinstance(side_effect, Iterable):
                raise TypeError("side_effect= is a function or an iterable of outcomes")
            self.items = iter(list(side_effect))
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.effect is not None:
            return self.effect(*args, **kwargs)
        if self.items is not None:
            with self._lock:
                item = next(self.items, UNSET)
            if item is UNSET:
                raise RuntimeError("the mock's side_effect list ran out of outcomes")
            return _give(item)
        if self.raises is not UNSET:
            return _give(self.raises)
        return self.returns


def _give(item: Any) -> Any:
    if isinstance(item, BaseException) or (
        isinstance(item, type) and issubclass(item, BaseException)
    ):
        raise item
    return item


@dataclass(frozen=True)
class Call:
    """One body call: the step's name, and the arguments it was called with."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class StepMocks:
    """The body substitute (runtime.durable.body) of one environment."""

    def __init__(self) -> None:
        self.mocks: list[tuple[Target, Outcome]] = []
        self.log: list[Call] = []
        self._lock = threading.Lock()

    def add(self, target: Target, outcome: Outcome) -> None:
        with self._lock:
            self.mocks.insert(0, (target, outcome))  # the latest mock of a step wins

    def __call__(self, call: BodyCall) -> BodyCall:
        name = call.info.name
        with self._lock:
            self.log.append(Call(name, call.fn, tuple(call.args), dict(call.kwargs)))
            found = next((o for t, o in self.mocks if t.matches(name, call.fn)), None)
        return call if found is None else replace(call, fn=found)

    def calls(self, target: Target) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        with self._lock:
            return [(c.args, c.kwargs) for c in self.log if target.matches(c.name, c.fn)]


class WorkflowMocks:
    """The workflow substitute (runtime.executor) of one environment."""

    def __init__(self) -> None:
        self.mocks: list[tuple[Target, Outcome]] = []
        self.log: list[Call] = []
        self._lock = threading.Lock()

    def add(self, target: Target, outcome: Outcome) -> None:
        with self._lock:
            self.mocks.insert(0, (target, outcome))

    def __call__(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        with self._lock:
            found = next((o for t, o in self.mocks if t.matches(name, fn)), None)
        if found is None:
            return fn

        def stand_in(ctx: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.log.append(Call(name, fn, tuple(args), dict(kwargs)))
            return found(*args, **kwargs)

        return stand_in

    def calls(self, target: Target) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        with self._lock:
            return [(c.args, c.kwargs) for c in self.log if target.matches(c.name, c.fn)]
