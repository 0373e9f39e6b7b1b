"""JSON and size errors, argument checks and idempotent starts, on real PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from run_records import BodyCalls, event_types, payloads, run_row, step_at, steps

from runtime import PayloadError, start, step, workflow
from runtime.core.errors import (
    IdempotencyConflict,
    InvalidArguments,
    PayloadTooLarge,
    WorkflowNotFound,
)
from runtime.executor import Execution, ExecutionOutcome
from runtime.models import Event, Run
from runtime.services import start_run

calls = BodyCalls()


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    calls.clear()
    yield


@step(name="tests.payloads.produce")
def produce(kind: str) -> Any:
    calls.hit(kind)
    if kind == "datetime":
        return {"at": datetime(2030, 1, 1, tzinfo=UTC)}
    if kind == "set":
        return {1, 2, 3}
    if kind == "large":
        return "x" * 2000
    if kind == "nul":
        return {"text": "a\x00b"}  # jsonb cannot hold U+0000
    return kind


@workflow(name="tests.payloads.returns")
def returns(ctx: Any, kind: str) -> Any:
    return ctx.step(produce, kind)


@workflow(name="tests.payloads.passes")
def passes(ctx: Any) -> Any:
    return ctx.step(produce, datetime(2030, 1, 1, tzinfo=UTC))


@workflow(name="tests.payloads.ends_with_a_set")
def ends_with_a_set(ctx: Any) -> Any:
    ctx.step(produce, "fine")
    return {"a", "b"}


@pytest.mark.parametrize(
    ("kind", "error_type", "problem"),
    [
        ("datetime", "PayloadError", "value of type datetime at $.at is not JSON"),
        ("set", "PayloadError", "value of type set at $ is not JSON"),
        ("large", "PayloadTooLarge", "2002 bytes of JSON is over the limit of 1000 bytes"),
        ("nul", "PayloadError", "text at $.text contains U+0000, which cannot be stored"),
    ],
)
def test_payloads_bad_step_result_fails_the_step_naming_it_and_the_problem(
    run_now: Callable[..., Execution],
    fanfold_settings: Callable[..., None],
    kind: str,
    error_type: str,
    problem: str,
) -> None:
    fanfold_settings(MAX_PAYLOAD_BYTES="1000")
    run, _ = start_run("tests.payloads.returns", [kind])

    assert run_now(run.id).outcome is ExecutionOutcome.FAILED  # recorded, not raised at the worker
    assert calls[kind] == 1  # never retried
    row = step_at(run.id, 1)
    assert (row.status, row.attempt, row.error["type"]) == ("failed", 1, error_type)
    assert row.error["message"] == f"step 'tests.payloads.produce' result: {problem}"
    assert row.result is None
    run_error = run_row(run.id).error
    assert (run_error["type"], run_error["cause_type"]) == ("StepFailed", error_type)
    assert "tests.payloads.produce" in run_error["message"] and problem in run_error["message"]
    assert event_types(run.id)[-2:] == ["step_failed", "run_failed"]


def test_payloads_bad_step_input_fails_the_run_before_the_body(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.payloads.passes")
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    assert calls.snapshot() == {}
    error = run_row(run.id).error
    assert error["type"] == "PayloadError"
    assert error["message"].startswith("step 'tests.payloads.produce' input: ")
    assert "value of type datetime at $.args[0] is not JSON" in error["message"]
    assert steps(run.id) == []


def test_payloads_bad_workflow_result_fails_the_run(run_now: Callable[..., Execution]) -> None:
    run, _ = start_run("tests.payloads.ends_with_a_set")
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    row = run_row(run.id)
    assert (row.status, row.result) == ("failed", None)
    assert row.error["message"] == "workflow result: value of type set at $ is not JSON"
    assert step_at(run.id, 1).status == "completed"


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ([datetime(2030, 1, 1, tzinfo=UTC)], {}, PayloadError),
        ([], {"kind": b"bytes"}, PayloadError),
        (["nul\x00"], {}, PayloadError),
        (["x" * 2000], {}, PayloadTooLarge),
        ([], {}, InvalidArguments),
        (["a", "b"], {}, InvalidArguments),
        ([], {"sort": "a"}, InvalidArguments),
    ],
)
def test_payloads_start_rejects_bad_input_and_records_nothing(
    fanfold_settings: Callable[..., None],
    enqueued: Any,
    args: list[Any],
    kwargs: dict[str, Any],
    error: type[Exception],
) -> None:
    fanfold_settings(MAX_PAYLOAD_BYTES="1000")
    with pytest.raises(error) as info:
        start_run("tests.payloads.returns", args, kwargs, idempotency_key="bad-input")
    assert "tests.payloads.returns" in str(info.value)
    assert Run.objects.count() == 0
    assert Event.objects.count() == 0
    assert enqueued.calls == []


def test_payloads_start_of_an_unknown_workflow_records_nothing(enqueued: Any) -> None:
    with pytest.raises(WorkflowNotFound):
        start_run("tests.payloads.nope")
    assert (Run.objects.count(), enqueued.calls) == (0, [])


def test_payloads_start_records_the_run_and_enqueues_it_after_commit(enqueued: Any) -> None:
    handle = start("tests.payloads.returns", kind="fine")
    assert handle.created
    row = run_row(handle.id)
    assert (row.status, row.input) == ("pending", {"args": [], "kwargs": {"kind": "fine"}})
    assert payloads(handle.id, "run_created") == [
        {"workflow": "tests.payloads.returns", "input": row.input, "idempotency_key": None}
    ]
    assert enqueued.calls == [(handle.id, None)]


def test_payloads_idempotent_start_returns_the_first_run_whatever_its_state(
    run_now: Callable[..., Execution], enqueued: Any
) -> None:
    first = start(returns, "fine", idempotency_key="order-42")
    again = start("tests.payloads.returns", "fine", idempotency_key="order-42")
    assert (again.id, first.created, again.created) == (first.id, True, False)
    assert again.status == "pending"
    with pytest.raises(IdempotencyConflict):  # the same key with other arguments
        start("tests.payloads.returns", "other", idempotency_key="order-42")

    assert run_now(first.id).outcome is ExecutionOutcome.COMPLETED
    finished = start("tests.payloads.returns", "fine", idempotency_key="order-42")
    assert (finished.id, finished.created, finished.status) == (first.id, False, "completed")

    assert Run.objects.count() == 1
    assert run_row(first.id).input["args"] == ["fine"]
    assert enqueued.calls == [(first.id, None)]
    assert calls.snapshot() == {"fine": 1}

    other = start("tests.payloads.returns", "fine", idempotency_key="order-43")
    assert other.id != first.id and other.created


@workflow(name="tests.payloads.long_step_name")
def long_step_name(ctx: Any) -> Any:
    return ctx.step(lambda: 1, name="n" * 201)


def test_payloads_step_name_the_database_cannot_store_fails_the_run(
    run_now: Callable[..., Execution],
) -> None:
    run, _ = start_run("tests.payloads.long_step_name")
    assert run_now(run.id).outcome is ExecutionOutcome.FAILED
    error = run_row(run.id).error
    assert error["type"] == "ValueError"
    assert "step name must be a non-empty string of at most 200 characters" in error["message"]
    assert steps(run.id) == []


@pytest.mark.parametrize(
    ("key", "problem"),
    [("", "non-empty"), ("k" * 256, "at most 255"), ("key\x00", "NUL"), (7, "non-empty string")],
)
def test_payloads_start_refuses_an_idempotency_key_it_cannot_store(
    enqueued: Any, key: Any, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        start_run("tests.payloads.returns", ["fine"], idempotency_key=key)
    assert Run.objects.count() == 0
    assert enqueued.calls == []
