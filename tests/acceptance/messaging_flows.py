"""Workflows of the messaging acceptance tests; workers import them through
FANFOLD_WORKFLOW_MODULES=tests.acceptance.messaging_flows. Step bodies count in Redis (the
broker's database, flushed by each test) so the test sees what every worker process did."""

from __future__ import annotations

from typing import Any

from runtime import emit_signal, send, step, workflow
from tests.support.services import counters_redis_client

MODULE = __name__
FORWARDS = "tests:accmsg:forwards"  # +1 each time the step after a durable send runs
EMITS = "tests:accmsg:emits"  # +1 each time the step after a workflow emit runs


@step(name="tests.accmsg.tick")
def tick(counter: str) -> int:
    return int(counters_redis_client().incr(counter))


@workflow(name="tests.accmsg.inbox")
def inbox(ctx: Any, topic: str, n: int, timeout: float | None = None) -> list[Any]:
    """Receive `n` messages on `topic`, sleeping between them so that every receive replays."""
    got = []
    for _ in range(n):
        got.append(ctx.recv(topic, timeout=timeout))
        ctx.sleep(0.01)
    return got


@workflow(name="tests.accmsg.gated_inbox")
def gated_inbox(ctx: Any, n: int) -> list[Any]:
    """Wait for "gate" first: messages on "data" sent meanwhile wait in the mailbox."""
    ctx.recv("gate")
    return [ctx.recv("data") for _ in range(n)]


@workflow(name="tests.accmsg.forward")
def forward(ctx: Any, to: str, times: int) -> int:
    """Send one message to `to`, then suspend `times` times: every pass replays the send."""
    send(to, "forwarded", {"from": str(ctx.run_id)})
    for _ in range(times):
        ctx.step(tick, FORWARDS)
        ctx.sleep(0.01)
    return times


@workflow(name="tests.accmsg.paid")
def paid(
    ctx: Any, order_id: str, timeout: float | None = None, lookback: float | None = None
) -> Any:
    return ctx.wait_for_signal(
        "accmsg.settled", match={"order_id": order_id}, timeout=timeout, lookback=lookback
    )


@workflow(name="tests.accmsg.paid_twice")
def paid_twice(ctx: Any, order_id: str) -> list[Any]:
    """Two waits one after the other: each takes a signal once."""
    first = ctx.wait_for_signal("accmsg.settled", match={"order_id": order_id})
    second = ctx.wait_for_signal("accmsg.settled", match={"order_id": order_id}, timeout=1.0)
    return [first, second]


@workflow(name="tests.accmsg.emitter")
def emitter(ctx: Any, order_id: str, times: int) -> int:
    took = emit_signal("accmsg.settled", {"order_id": order_id, "by": "workflow"})
    for _ in range(times):
        ctx.step(tick, EMITS)
        ctx.sleep(0.01)
    return took


@workflow(name="tests.accmsg.echo")
def echo(ctx: Any, value: Any) -> Any:
    return value


@workflow(name="tests.accmsg.single_skip", concurrency=1, on_limit="skip")
def single_skip(ctx: Any, label: str) -> str:
    ctx.recv("go")
    return label


@workflow(name="tests.accmsg.single_replace", concurrency=1, on_limit="cancel_running")
def single_replace(ctx: Any, label: str) -> str:
    ctx.recv("go")
    return label


@workflow(name="tests.accmsg.single_queue", concurrency=1)
def single_queue(ctx: Any, label: str) -> str:
    ctx.recv("go")
    return label


STARTS = "tests:accmsg:starts"  # one entry per time a `chat` run's code starts from its top


@workflow(name="tests.accmsg.chat")
def chat(ctx: Any, messages: int) -> int:
    """A long-lived run taking `messages` messages: a warm resume goes on from the parked
    call, a replay starts the code again (counted)."""
    counters_redis_client().rpush(STARTS, str(ctx.run_id))
    return sum(ctx.recv("m") for _ in range(messages))
