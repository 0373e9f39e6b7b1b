"""Workflows and helpers shared by the callback tests (names prefixed "tests.callbacks.")."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from runtime import CallbackFailed, CallbackTimedOut, workflow
from runtime.core.clock import FakeClock
from runtime.executor import Execution, execute
from runtime.models import Run
from runtime.services import post_callback, start_run
from runtime.testing import callback_token
from tests.support.driven_by_hand import T0 as T0  # the tests' clock starts here


def handed_out(token: str) -> str:
    return token[:4]


@workflow(name="tests.callbacks.approval")
def approval(ctx: Any, order: str) -> dict[str, Any]:
    cb = ctx.create_callback("approval", timeout=timedelta(minutes=10))
    ctx.step(handed_out, cb.token)
    try:
        decision = cb.wait()
    except CallbackFailed as exc:
        return {"order": order, "failed": exc.error_type, "message": exc.error_message}
    except CallbackTimedOut as exc:
        return {"order": order, "timed_out": str(exc)}
    return {"order": order, "decision": decision}


@workflow(name="tests.callbacks.uncaught")
def uncaught(ctx: Any) -> Any:
    return ctx.create_callback("answer").wait()


@workflow(name="tests.callbacks.heartbeat")
def heartbeat(ctx: Any) -> Any:
    cb = ctx.create_callback("job", timeout=300, heartbeat_timeout=30)
    try:
        return {"done": cb.wait()}
    except CallbackTimedOut as exc:
        return {"timed_out": str(exc)}


@workflow(name="tests.callbacks.sleepy")
def sleepy(ctx: Any) -> Any:
    cb = ctx.create_callback("early")
    ctx.sleep(60)
    return cb.wait()


def post_now(token: str) -> str:
    post_callback(token, result={"posted": "inside"})
    return "posted"


@workflow(name="tests.callbacks.self_posting")
def self_posting(ctx: Any) -> Any:
    cb = ctx.create_callback("self", timeout=60)
    ctx.step(post_now, cb.token)
    return cb.wait()


def start(workflow_name: str, *args: Any) -> uuid.UUID:
    run, _ = start_run(workflow_name, list(args))
    return run.id


def run_once(run_id: uuid.UUID, clock: FakeClock) -> Execution:
    return execute(run_id, clock=clock)


def token_of(run_id: uuid.UUID, name: str | None = None) -> str:
    return callback_token(run_id, name or None)


def run_row(run_id: uuid.UUID) -> Run:
    return Run.objects.get(id=run_id)
