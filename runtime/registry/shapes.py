"""The shapes the typed public API is written in: what a Django task looks like to a type
checker, and the step-like things `ctx.step` and `ctx.map` take.

A Django task (`django.tasks` on Django 6, the `django_tasks` backport on 5.2) is matched by
its shape, so that the runtime's typing needs neither framework installed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ParamSpec, Protocol, TypeVar

from runtime.registry.functions import SignatureMap, StepFunction, WorkflowFunction
from runtime.registry.table import registry

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
R_co = TypeVar("R_co", covariant=True)


class TaskLike(Protocol[P, R_co]):
    """A Django task: `call(*args, **kwargs)` runs its function, `module_path` names it."""

    def call(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    @property
    def module_path(self) -> str: ...


# What `ctx.map` fans out over each item: a registered step, a registered workflow (a child
# workflow per item) or a Django task, taking one item as its one argument.
Mappable = StepFunction[[T], R] | WorkflowFunction[[T], R] | TaskLike[[T], R]


def fan_out_of(fn: object, items: Iterable[Any]) -> SignatureMap:
    """`ctx.map`'s signatures: one call of `fn` per item (made only when iterated)."""
    if not isinstance(fn, StepFunction | WorkflowFunction):
        found = registry.step_for(fn)
        if found is None:
            raise TypeError("ctx.map takes a registered @step or @workflow function, or a task")
        fn = found
    return SignatureMap(fn.name, fn.signature_kind, list(items))
