"""CeleryTransport against real RabbitMQ: publisher confirms give each message its outcome."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from amqp.channel import Channel as AmqpChannel
from celery import Celery
from kombu import Connection, Queue

from publisher.celery_transport import CeleryTransport
from publisher.core import publish_messages
from publisher.errors import PublishError
from publisher.messages import Message, Routing
from publisher.metrics import counters
from tests.support.services import RABBITMQ, require

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"


@pytest.fixture
def queue_name() -> Iterator[str]:
    require(RABBITMQ, "RabbitMQ")
    name = f"publisher-amqp-{uuid.uuid4().hex[:8]}"
    yield name
    with Connection(AMQP_URL) as connection:
        connection.default_channel.queue_delete(name)


@pytest.fixture
def amqp_app(queue_name: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Celery]:
    monkeypatch.setenv("CELERY_BROKER_URL", AMQP_URL)
    app = Celery("publisher-amqp", broker=AMQP_URL, set_as_current=False)
    # A queue that takes five messages and refuses (nacks) the rest.
    bounded = Queue(
        f"{queue_name}-bounded",
        queue_arguments={"x-max-length": 5, "x-overflow": "reject-publish"},
    )
    app.conf.update(task_serializer="json", accept_content=["json"], task_queues=[bounded])
    app.conf.task_create_missing_queues = True
    yield app
    with Connection(AMQP_URL) as connection:
        connection.default_channel.queue_delete(bounded.name)
    app.close()


def messages(count: int, routing: Routing, prefix: str = "m") -> list[Message]:
    return [Message("tests.work", f"{prefix}-{i}", args=[i], routing=routing) for i in range(count)]


def depth(name: str) -> int:
    with Connection(AMQP_URL) as connection:
        return int(connection.default_channel.queue_declare(name, passive=True).message_count)


def test_publisher_amqp_confirms_every_message_of_250_in_3_requests(
    amqp_app: Celery, queue_name: str
) -> None:
    batch = messages(250, Routing(queue_name))
    outcomes = publish_messages(batch, CeleryTransport(amqp_app), batch_size=100)
    assert [o.message_id for o in outcomes] == [m.idempotency_key for m in batch]
    assert counters.snapshot().requests == 3
    assert depth(queue_name) == 250


def test_publisher_amqp_batch_is_not_confirmed_message_by_message_under_confirm_publish(
    amqp_app: Celery, queue_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo settings give Celery's own sends `confirm_publish`; with it py-amqp waits for
    # each message's ack inside basic_publish, which the batch's channel must not inherit.
    amqp_app.conf.broker_transport_options = {"confirm_publish": True}
    waits: list[object] = []
    confirm_each = AmqpChannel.basic_publish_confirm

    def counted(channel: AmqpChannel, *args: object, **kwargs: object) -> object:
        waits.append(channel)
        return confirm_each(channel, *args, **kwargs)

    monkeypatch.setattr(AmqpChannel, "basic_publish_confirm", counted)
    batch = messages(100, Routing(queue_name))
    outcomes = publish_messages(batch, CeleryTransport(amqp_app), batch_size=100)
    assert all(o.ok for o in outcomes)
    assert waits == []
    assert depth(queue_name) == 100


def test_publisher_amqp_nacked_messages_fail_alone_and_retryably(
    amqp_app: Celery, queue_name: str
) -> None:
    batch = messages(8, Routing(f"{queue_name}-bounded"))
    with pytest.raises(PublishError) as info:
        publish_messages(batch, CeleryTransport(amqp_app))
    outcomes = info.value.outcomes
    assert [o.ok for o in outcomes] == [True] * 5 + [False] * 3
    assert all(o.retryable and "nacked" in (o.error or "") for o in outcomes[5:])
    assert info.value.retryable and info.value.failed == 3
    assert depth(f"{queue_name}-bounded") == 5


def test_publisher_amqp_returned_message_is_a_failed_entry(
    amqp_app: Celery, queue_name: str
) -> None:
    routed = messages(2, Routing(queue_name), prefix="routed")
    nowhere = messages(1, Routing(exchange="amq.direct", routing_key="no-such-queue"), "lost")
    with pytest.raises(PublishError) as info:
        publish_messages([*routed, *nowhere], CeleryTransport(amqp_app))
    keys = [m.idempotency_key for m in [*routed, *nowhere]]
    by_key = dict(zip(keys, info.value.outcomes, strict=True))
    assert by_key["routed-0"].ok and by_key["routed-1"].ok
    lost = by_key["lost-0"]
    assert not lost.ok and lost.retryable and "returned by the broker" in (lost.error or "")


def test_publisher_amqp_unencodable_message_fails_alone_and_tags_stay_aligned(
    amqp_app: Celery, queue_name: str
) -> None:
    batch = messages(4, Routing(queue_name))
    batch[1] = Message("tests.work", "bad", args=[object()], routing=Routing(queue_name))
    transport = CeleryTransport(amqp_app)
    with pytest.raises(PublishError) as info:
        publish_messages(batch, transport)
    assert [o.ok for o in info.value.outcomes] == [True, False, True, True]
    assert not info.value.outcomes[1].retryable
    # The channel stays usable: the next batch is confirmed message by message again.
    again = publish_messages(messages(3, Routing(queue_name), "again"), transport)
    assert [o.message_id for o in again] == ["again-0", "again-1", "again-2"]
    assert depth(queue_name) == 6
