"""Parking a sync workflow at a wait instead of unwinding it (the warm cache, runtime.warm).

A sync workflow's code runs in a greenlet of the run's thread (`ParkedWorkflow`). When a
waiting call of its context (`@parks`) would suspend the run, the greenlet switches back to the
executor with the `Suspend` instead of raising it: the executor suspends the run as it always
does, and the worker keeps the greenlet, the workflow's frames intact. A later resume of the run
in this thread switches back into it: the waiting call goes back to the position it started at
and is made again over the history as it is now, exactly as a replay from the start would make
it when it gets there, and the code goes on from there. Nothing before that call runs again.

Code that does not run in a parking greenlet (a cold pass, an async workflow, the replay
check) gets the `Suspend` raised, as before.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from greenlet import getcurrent, greenlet

from runtime.core.control import Suspend
from runtime.durable.cursor import ReplayCursor

F = TypeVar("F", bound=Callable[..., Any])


class WarmRunDropped(BaseException):
    """Thrown into a parked workflow that the worker lets go of: it unwinds, writing nothing."""


@dataclass(frozen=True)
class Parked:
    """What a pass of a parking workflow ended with when it did not end: the suspend."""

    suspend: Suspend


class _WorkflowGreenlet(greenlet):
    cursor: ReplayCursor
    inherited: contextvars.Context


def parks(method: F) -> F:
    """Make a waiting context call park its workflow (see the module) where it can."""

    @functools.wraps(method)
    def call(owner: Any, *args: Any, **kwargs: Any) -> Any:
        cursor: ReplayCursor = owner.cursor
        start = cursor.position
        while True:
            try:
                return method(owner, *args, **kwargs)
            except Suspend as suspend:
                here = getcurrent()
                if not isinstance(here, _WorkflowGreenlet) or here.cursor is not cursor:
                    raise
                if cursor.fatal is not None:
                    raise
                resumed_in = here.parent.switch(Parked(suspend))
                _adopt(here, resumed_in)
                cursor.rewind(start)

    return cast("F", call)


def _adopt(here: _WorkflowGreenlet, outer: contextvars.Context) -> None:
    """Take the values of the executor's context variables (this pass's), except those the
    workflow's own code set itself (a `with` block still open around the wait)."""
    own = contextvars.copy_context()
    for var, value in outer.items():
        if var not in own or own[var] is here.inherited.get(var, _UNSET):
            var.set(value)
    here.inherited = outer


_UNSET = object()


class ParkedWorkflow:
    """A sync workflow's call `run()` in a greenlet that parks at its waits."""

    def __init__(self, cursor: ReplayCursor, run: Callable[[], Any]) -> None:
        glet = _WorkflowGreenlet(run)
        glet.cursor = cursor
        glet.inherited = contextvars.copy_context()
        glet.gr_context = glet.inherited.copy()
        self._glet = glet

    @property
    def parked(self) -> bool:
        """Whether the workflow waits in its greenlet (it neither finished nor raised)."""
        return bool(self._glet) and not self._glet.dead

    def switch(self) -> Any:
        """Run the workflow until it returns (its result), raises, or parks (`Parked`); from
        the thread that created it, as the greenlet must."""
        self._glet.parent = getcurrent()
        if not self._glet:  # not started yet
            return self._glet.switch()
        return self._glet.switch(contextvars.copy_context())

    def drop(self) -> None:
        """Unwind a parked workflow: its durable calls raise (the cursor's fatal error), so
        its `finally` blocks can record nothing."""
        if not self.parked:
            return
        dropped = WarmRunDropped()
        self._glet.cursor.fail(dropped)
        self._glet.parent = getcurrent()
        try:
            self._glet.throw(dropped)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:
            pass
