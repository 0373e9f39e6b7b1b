"""CeleryTransport over the in-process ``memory://`` broker, where kombu has no batches."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery

from publisher.celery_transport import CeleryTransport
from publisher.core import publish_messages
from publisher.errors import PublishError
from publisher.messages import IDEMPOTENCY_HEADER, Message, Routing


@pytest.fixture
def app() -> Iterator[Celery]:
    app = Celery("publisher-memory", broker="memory://", set_as_current=False)
    app.conf.task_serializer = "json"
    app.conf.accept_content = ["json"]
    yield app
    app.close()


@pytest.fixture
def queue() -> str:
    # The memory broker's queues are process-wide: a fresh name per test keeps them apart.
    return f"publisher-{uuid.uuid4().hex}"


def drain(app: Celery, queue: str, count: int) -> list[Any]:
    received = []
    with app.connection_for_read() as connection:
        simple = connection.SimpleQueue(queue)
        for _ in range(count):
            message = simple.get(timeout=1)
            message.ack()
            received.append(message)
        simple.close()
    return received


def test_celery_transport_publishes_task_messages_over_memory(app: Celery, queue: str) -> None:
    messages = [
        Message("tests.add", f"key-{i}", args=[i, 1], kwargs={"n": i}, routing=Routing(queue))
        for i in range(12)
    ]

    outcomes = publish_messages(messages, CeleryTransport(app, batch_size=5))

    assert [o.message_id for o in outcomes] == [f"key-{i}" for i in range(12)]
    received = drain(app, queue, 12)
    assert [m.headers["id"] for m in received] == [f"key-{i}" for i in range(12)]
    assert [m.headers[IDEMPOTENCY_HEADER] for m in received] == [f"key-{i}" for i in range(12)]
    assert {m.headers["task"] for m in received} == {"tests.add"}
    args, kwargs, _embed = received[3].payload
    assert (args, kwargs) == ([3, 1], {"n": 3})
    assert received[0].content_type == "application/json"


def test_celery_transport_send_publishes_one_message(app: Celery, queue: str) -> None:
    outcome = CeleryTransport(app).send(
        Message("tests.one", "only", headers={"x-run": "r1"}, routing=Routing(queue))
    )

    (received,) = drain(app, queue, 1)
    assert outcome.message_id == "only"
    assert received.headers["x-run"] == "r1"


def test_celery_transport_fails_bad_messages_alone(app: Celery, queue: str) -> None:
    messages = [
        Message("tests.t", "good-1", routing=Routing(queue)),
        Message("tests.t", "not-json", args=[object()], routing=Routing(queue)),
        Message("tests.t", "clash", headers={"task": "other"}, routing=Routing(queue)),
        Message("tests.t", "good-2", routing=Routing(queue)),
    ]

    with pytest.raises(PublishError, match="2 of 4") as caught:
        publish_messages(messages, CeleryTransport(app))

    assert caught.value.retryable is False
    assert "reserved" in (caught.value.outcomes[2].error or "")
    assert [m.headers["id"] for m in drain(app, queue, 2)] == ["good-1", "good-2"]


def test_celery_transport_rejects_a_batch_size_below_one(app: Celery) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        CeleryTransport(app, batch_size=0)


def test_celery_transport_routes_by_task_name_from_task_routes(app: Celery, queue: str) -> None:
    app.conf.task_routes = {"tests.routed": {"queue": queue}}
    messages = [Message("tests.routed", f"r-{i}", args=[i]) for i in range(7)]

    publish_messages(messages, CeleryTransport(app, batch_size=3))

    received = drain(app, queue, 7)
    assert [m.headers["id"] for m in received] == [f"r-{i}" for i in range(7)]
    assert {m.headers["origin"] for m in received} == {received[0].headers["origin"]}
    assert received[4].headers["argsrepr"] == "[4]"


def test_celery_transport_asks_a_router_function_for_every_message(app: Celery) -> None:
    even, odd = f"even-{uuid.uuid4().hex}", f"odd-{uuid.uuid4().hex}"

    def by_parity(name: str, args: Any, kwargs: Any, options: Any, **_: Any) -> dict[str, str]:
        return {"queue": even if args[0] % 2 == 0 else odd}

    app.conf.task_routes = (by_parity,)
    messages = [Message("tests.parity", f"p-{i}", args=[i]) for i in range(6)]

    publish_messages(messages, CeleryTransport(app))

    assert [m.payload[0][0] for m in drain(app, even, 3)] == [0, 2, 4]
    assert [m.payload[0][0] for m in drain(app, odd, 3)] == [1, 3, 5]
