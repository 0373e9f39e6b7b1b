"""The registry: workflows and steps by name, and `registry`, this process's one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.core.errors import RegistrationError, WorkflowNotFound
from runtime.registry.functions import StepFunction, WorkflowFunction, default_name


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
        same = default_name(existing.fn) == default_name(fn)
        if same:  # the same function imported twice (e.g. by two import paths) is no clash
            return True
        raise RegistrationError(
            f"{what} name {name!r} is registered twice: by {default_name(existing.fn)} "
            f"and by {default_name(fn)}; names must be unique"
        )

    def add_workflow(self, wf: WorkflowFunction[Any]) -> None:
        if not self._check_clash(self.workflows, wf.name, wf.fn, "workflow"):
            self.workflows[wf.name] = wf

    def add_step(self, st: StepFunction[Any, Any]) -> None:
        if not self._check_clash(self.steps, st.name, st.fn, "step"):
            self.steps[st.name] = st

    def modules(self) -> set[str]:
        """The names of the modules whose functions are registered (workflows and steps)."""
        found = {wf.fn.__module__ for wf in self.workflows.values()}
        return found | {st.fn.__module__ for st in self.steps.values()}

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
