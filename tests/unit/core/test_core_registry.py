"""The registry: @step and @workflow, bare and with arguments, and name clashes."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import RetryPolicy, step, workflow
from runtime.core.errors import RegistrationError, WorkflowNotFound
from runtime.registry import Registry, Signature, StepFunction, WorkflowFunction, registry


def test_registry_bare_step_is_named_after_module_and_qualname() -> None:
    @step
    def double(x: int) -> int:
        return 2 * x

    assert isinstance(double, StepFunction)
    assert (
        double.name
        == f"{__name__}.test_registry_bare_step_is_named_after_module_and_qualname.<locals>.double"
    )
    assert (double.retry, double.at_most_once) == (None, False)
    assert double(4) == 8  # calling runs the body directly
    assert double.__name__ == "double"
    assert registry.step(double.name) is double


def test_registry_step_with_arguments_keeps_its_options() -> None:
    policy = RetryPolicy(max_attempts=7, jitter=False)

    @step(name="tests.core.charge", retry=policy, at_most_once=True)
    def charge(order: str, amount: float = 0.0) -> dict[str, Any]:
        return {"order": order, "amount": amount}

    assert (charge.name, charge.retry, charge.at_most_once) == ("tests.core.charge", policy, True)
    assert charge.s("o-1", amount=2.5) == Signature(
        "tests.core.charge", "step", ("o-1",), {"amount": 2.5}
    )
    assert registry.step("tests.core.charge") is charge


def test_registry_step_refuses_a_retry_that_is_not_a_policy() -> None:
    with pytest.raises(TypeError, match="RetryPolicy"):
        step(retry={"max_attempts": 3})  # type: ignore[call-overload]


@pytest.mark.parametrize("name", ["x" * 201, "tests.core.nul\x00", 42])
@pytest.mark.parametrize("decorator", [step, workflow])
def test_registry_refuses_a_name_the_database_cannot_store(decorator: Any, name: Any) -> None:
    with pytest.raises(ValueError, match="name must be a non-empty string of at most 200"):

        @decorator(name=name)
        def fn(ctx: Any = None) -> None:
            return None


def test_registry_workflow_bare_and_with_a_name() -> None:
    @workflow
    def bare(ctx: Any) -> int:
        return 1

    @workflow(name="tests.core.named")
    def named(ctx: Any, x: int) -> int:
        return x

    assert isinstance(bare, WorkflowFunction)
    assert bare.name.endswith("test_registry_workflow_bare_and_with_a_name.<locals>.bare")
    assert registry.workflow(bare.name) is bare
    assert registry.workflow("tests.core.named") is named
    assert registry.workflow(named) is named
    assert named.s(3) == Signature("tests.core.named", "child", (3,), {})
    assert named(None, 5) == 5


def test_registry_duplicate_step_name_is_an_error_naming_both_functions() -> None:
    @step(name="tests.core.dup_step")
    def first() -> None: ...

    with pytest.raises(RegistrationError) as info:

        @step(name="tests.core.dup_step")
        def second() -> None: ...

    message = str(info.value)
    assert "'tests.core.dup_step' is registered twice" in message
    assert "<locals>.first" in message and "<locals>.second" in message
    assert registry.step("tests.core.dup_step") is first


def test_registry_duplicate_workflow_name_is_an_error() -> None:
    @workflow(name="tests.core.dup_workflow")
    def first(ctx: Any) -> None: ...

    with pytest.raises(RegistrationError, match=r"workflow name 'tests\.core\.dup_workflow'"):

        @workflow(name="tests.core.dup_workflow")
        def second(ctx: Any) -> None: ...

    assert registry.workflow("tests.core.dup_workflow") is first


def test_registry_same_function_registered_twice_is_not_a_clash() -> None:
    local = Registry()

    def fn(ctx: Any) -> None: ...

    original = WorkflowFunction(fn, "w")
    local.add_workflow(original)
    local.add_workflow(WorkflowFunction(fn, "w"))  # e.g. the module imported by two paths
    assert local.workflow("w") is original


def test_registry_steps_and_workflows_have_separate_namespaces() -> None:
    local = Registry()

    def fn() -> None: ...

    def other() -> None: ...

    local.add_step(StepFunction(fn, "same", None, False))
    local.add_workflow(WorkflowFunction(other, "same"))
    assert local.step("same").fn is fn
    assert local.workflow("same").fn is other


def test_registry_unknown_names_raise_workflow_not_found() -> None:
    local = Registry()
    with pytest.raises(WorkflowNotFound, match="no workflow is registered as 'nope'"):
        local.workflow("nope")
    with pytest.raises(WorkflowNotFound, match="no step is registered as 'nope'"):
        local.step("nope")
