"""The registry: workflows and steps by name, and `registry`, this process's one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from runtime.core.errors import RegistrationError, WorkflowNotFound
from runtime.registry.functions import StepFunction, WorkflowFunction, default_name

T = TypeVar("T")
AnyStep = StepFunction[..., Any]
# A step source makes a registered step of something that is not one (a Django task:
# runtime.django_tasks.steps), given the thing itself or the name its step would have; None
# when it is not one of its kind.
StepSource = Callable[[object], AnyStep | None]


class StepTable(dict[str, AnyStep]):
    """The registered steps by name. A name not registered in this process is asked of the
    step sources before it is a miss, so that a worker finds the step of a Django task that a
    workflow in another process fanned out (`ctx.map(task, items)`)."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: list[StepSource] = []

    def registered(self, name: str) -> AnyStep | None:
        """The step registered as `name` in this process, asking no source."""
        return dict.get(self, name)

    def __missing__(self, name: str) -> AnyStep:
        for source in self.sources:
            found = source(name)
            if found is not None:
                return found
        raise KeyError(name)

    @overload
    def get(self, name: str, default: None = None, /) -> AnyStep | None: ...

    @overload
    def get(self, name: str, default: AnyStep | T, /) -> AnyStep | T: ...

    def get(self, name: str, default: Any = None, /) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


class Registry:
    """Workflows and steps by name. A clash of names is an error when the second registers."""

    def __init__(self) -> None:
        self.workflows: dict[str, WorkflowFunction[..., Any]] = {}
        self.steps = StepTable()

    def _check_clash(
        self, table: dict[str, Any], name: str, fn: Callable[..., Any], what: str
    ) -> bool:
        existing = dict.get(table, name)  # the table's own entry: no step source is asked
        if existing is None:
            return False
        same = default_name(existing.fn) == default_name(fn)
        if same:  # the same function imported twice (e.g. by two import paths) is no clash
            return True
        raise RegistrationError(
            f"{what} name {name!r} is registered twice: by {default_name(existing.fn)} "
            f"and by {default_name(fn)}; names must be unique"
        )

    def add_workflow(self, wf: WorkflowFunction[..., Any]) -> None:
        if not self._check_clash(self.workflows, wf.name, wf.fn, "workflow"):
            self.workflows[wf.name] = wf

    def add_step(self, st: StepFunction[Any, Any]) -> None:
        if not self._check_clash(self.steps, st.name, st.fn, "step"):
            self.steps[st.name] = st

    def workflow(self, name_or_fn: str | WorkflowFunction[..., Any]) -> WorkflowFunction[..., Any]:
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

    def add_step_source(self, source: StepSource) -> None:
        """Let `ctx.step` and `ctx.map` take what `source` makes a step of (runtime.django_tasks
        adds Django tasks), and workers find those steps by name."""
        if source not in self.steps.sources:
            self.steps.sources.append(source)

    def step_for(self, fn: object) -> StepFunction[Any, Any] | None:
        """`fn` itself if it is a registered step, else the step a source makes of it."""
        if isinstance(fn, StepFunction):
            return fn
        for source in self.steps.sources:
            found = source(fn)
            if found is not None:
                return found
        return None


registry = Registry()
