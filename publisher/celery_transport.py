"""The Celery transport: ordinary Celery task messages, a batch per broker request.

On Redis a batch goes through kombu's ``Producer.batch()``, which buffers the LPUSHes of a whole
batch in one pipeline. On AMQP (RabbitMQ) a batch is published with publisher confirms on a
channel of the transport's own (``publisher.amqp_confirms``): the broker's ack, nack or return
of each message is its outcome. Other brokers (``memory://``) publish each message at once
inside the Redis code path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from celery import Celery
from celery.app.routes import MapRoute
from celery.utils.nodenames import anon_nodename
from kombu import Producer, Queue
from kombu.common import Broadcast

from publisher.amqp_confirms import CONFIRM_TIMEOUT, ConfirmedChannel, ConfirmedChannels
from publisher.argsrepr import arguments_repr
from publisher.errors import describe, is_retryable
from publisher.messages import IDEMPOTENCY_HEADER, Message, Outcome, Routing

# kombu's batch limit counts broker commands, not messages: a message costs one LPUSH, plus a
# PEXPIRE per priority step on queues with an expiry. Leave room for a whole batch so that it
# executes as one pipeline on exit instead of being flushed early by kombu.
_COMMANDS_PER_MESSAGE = 16


class CeleryTransport:
    """Publishes messages as Celery task messages (protocol 2) through ``app``'s broker.

    The idempotency key becomes the Celery task id and the ``fanfold_idempotency_key`` header,
    so an unmodified ``celery worker`` consumes the messages and a republish is recognisable.
    ``send_batch`` publishes at most ``batch_size`` messages per broker request; producers come
    from ``app.producer_pool`` so connections are reused.
    """

    def __init__(
        self, app: Celery, *, batch_size: int = 100, confirm_timeout: float = CONFIRM_TIMEOUT
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.app = app
        self.batch_size = batch_size
        self.confirm_timeout = confirm_timeout
        self._confirms: ConfirmedChannels | None = None
        self._checked_broker = False

    def send(self, message: Message) -> Outcome:
        """Publish one message; raises if the broker request failed."""
        confirms = self._confirmed_channels()
        if confirms is not None:
            with confirms.acquire() as channel:
                return self._publish_confirmed(channel, [message])[0]
        with self.app.producer_pool.acquire(block=True) as producer:
            _Publishing(self.app, producer).publish(message)
        return Outcome.sent(message.idempotency_key)

    def _confirmed_channels(self) -> ConfirmedChannels | None:
        """The confirmed channels when the broker is AMQP, else None."""
        if not self._checked_broker:
            with self.app.connection_for_write() as connection:
                if connection.transport.driver_type == "amqp":
                    self._confirms = ConfirmedChannels(self._confirming_connection)
            self._checked_broker = True
        return self._confirms

    def _confirming_connection(self) -> Any:
        """A connection for the confirmed channels, without kombu's own per-message confirms.

        With Celery's `confirm_publish` transport option (set for Celery's own sends) py-amqp
        makes every `basic_publish` wait for that message's ack: a batch of 100 would be 100
        round trips. The confirmed channel collects a whole batch's acks itself, so its
        connection leaves the option off.
        """
        return self.app.connection_for_write(transport_options={"confirm_publish": False})

    def _publish_confirmed(
        self, channel: ConfirmedChannel, messages: Sequence[Message]
    ) -> list[Outcome]:
        """Publish `messages` on a confirmed channel and wait for the broker's outcomes.

        A message that cannot be encoded fails alone and is never sent; a connection error
        raises (the whole request failed).
        """
        publishing = _Publishing(self.app, channel.producer, mandatory=True)
        tags: list[int | None] = []
        refused: dict[int, Outcome] = {}
        for index, message in enumerate(messages):
            try:
                publishing.publish(message)
            except Exception as exc:
                if is_retryable(exc):
                    raise
                refused[index] = Outcome.failure(describe(exc), retryable=False)
                tags.append(None)
            else:
                tags.append(channel.published(message.idempotency_key))
        confirmed = iter(channel.outcomes(tags, self.confirm_timeout))
        return [refused[i] if tag is None else next(confirmed) for i, tag in enumerate(tags)]

    def send_batch(self, messages: Sequence[Message]) -> list[Outcome]:
        """Publish ``messages`` in requests of at most ``batch_size``, one outcome per message.

        A message that cannot be encoded fails alone. If the first request fails nothing was
        sent and the error is raised; if a later one fails, the messages already sent keep
        their ids and the rest fail with the error, unattempted.
        """
        confirms = self._confirmed_channels()
        if confirms is not None:
            with confirms.acquire() as channel:
                return self._in_chunks(messages, lambda c: self._publish_confirmed(channel, c))
        with self.app.producer_pool.acquire(block=True) as producer:
            publishing = _Publishing(self.app, producer)
            return self._in_chunks(messages, publishing.publish_batch)

    def _in_chunks(
        self,
        messages: Sequence[Message],
        request: Callable[[Sequence[Message]], list[Outcome]],
    ) -> list[Outcome]:
        """One `request` per chunk of at most `batch_size`; after a failed one, the rest fail."""
        outcomes: list[Outcome] = []
        broken: Outcome | None = None
        for start in range(0, len(messages), self.batch_size):
            chunk = messages[start : start + self.batch_size]
            if broken is not None:
                outcomes.extend([broken] * len(chunk))
                continue
            try:
                outcomes.extend(request(chunk))
            except Exception as exc:
                if start == 0:
                    raise
                broken = Outcome.failure(describe(exc), retryable=is_retryable(exc))
                outcomes.extend([broken] * len(chunk))
        return outcomes


class _Publishing:
    """One producer's publishing of one call's messages.

    What is the same for every message of a call (the origin, the repr depth, a task's
    ignore_result, the route of a task and routing, the queue declaration) is looked up once:
    per message, Celery would read its configuration view and declare the queue again, which
    cost more than building and sending the message itself.
    """

    def __init__(self, app: Celery, producer: Producer, *, mandatory: bool = False) -> None:
        self.app = app
        self.producer = producer
        # On a confirmed channel a message no queue takes must come back, not vanish.
        self._properties = {"mandatory": True} if mandatory else {}
        self.origin = anon_nodename()
        self.repr_levels = app.conf.task_repr_maxlevels
        self._ignore_result: dict[str, bool] = {}
        self._routes: dict[tuple[str, Routing], dict[str, Any]] = {}
        # `task_routes` maps route by task name only; a router function may look at the
        # arguments, so with one of those every message is routed on its own.
        routes = getattr(app.amqp.router, "routes", None)  # untyped in celery-types
        self._routes_by_name = routes is not None and all(isinstance(r, MapRoute) for r in routes)

    def publish_batch(self, messages: Sequence[Message]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        # celery-types' kombu stubs predate kombu 5.7, which added Producer.batch().
        batch = self.producer.batch(max_size=len(messages) * _COMMANDS_PER_MESSAGE)  # type: ignore[attr-defined]
        with batch:
            for message in messages:
                try:
                    self.publish(message)
                except Exception as exc:
                    # A transient error means the connection or batch is unusable: leaving
                    # the block by raising discards what was buffered, so the whole request
                    # fails. A permanent one was raised while encoding, before buffering.
                    if is_retryable(exc):
                        raise
                    outcomes.append(Outcome.failure(describe(exc), retryable=False))
                else:
                    outcomes.append(Outcome.sent(message.idempotency_key))
        return outcomes

    def publish(self, message: Message) -> None:
        amqp = self.app.amqp
        task_message = amqp.create_task_message(
            message.idempotency_key,
            message.task,
            message.args,
            message.kwargs,
            # The message's own flag overrides the task's on the worker: carry the task's, so
            # a task declared ignore_result=True does not store a result per message.
            ignore_result=self._ignores_result(message.task),
            origin=self.origin,
            argsrepr=arguments_repr(
                message.args, amqp.argsrepr_maxsize, maxlevels=self.repr_levels
            ),
            kwargsrepr=arguments_repr(
                message.kwargs, amqp.kwargsrepr_maxsize, maxlevels=self.repr_levels
            ),
        )
        protocol_headers = task_message.headers
        clashes = sorted(set(message.headers) & set(protocol_headers))
        if clashes:
            raise ValueError(f"headers {clashes} are reserved by the Celery task protocol")
        headers = {**message.headers, IDEMPOTENCY_HEADER: message.idempotency_key}
        amqp.send_task_message(
            self.producer,
            message.task,
            task_message,
            headers=headers,
            retry=False,
            **self._properties,
            **self._route(message),
        )

    def _ignores_result(self, task_name: str) -> bool:
        known = self._ignore_result.get(task_name)
        if known is None:
            task = self.app.tasks.get(task_name)
            if task is not None and task.ignore_result is not None:
                known = bool(task.ignore_result)
            else:
                known = bool(self.app.conf.task_ignore_result)
            self._ignore_result[task_name] = known
        return known

    def _route(self, message: Message) -> dict[str, Any]:
        """Publish options: the message's routing, completed by the app's task router.

        With name-only routes they are computed once per task and routing, and the queue is
        declared on the first message of a route and not again.
        """
        if not self._routes_by_name:
            return self._compute_route(message)
        key = (message.task, message.routing)
        options = self._routes.get(key)
        if options is None:
            options = self._compute_route(message)
            queue = options.get("queue")
            if isinstance(queue, Queue) and not isinstance(queue, Broadcast):
                self.producer.maybe_declare(queue)
                options["declare"] = []  # declared just now: not again per message
            self._routes[key] = options
        return options  # unpacked into the call's own keyword arguments: never changed

    def _compute_route(self, message: Message) -> dict[str, Any]:
        routing = message.routing
        requested: dict[str, Any] = {}
        if routing.queue is not None:
            requested["queue"] = routing.queue
        options: dict[str, Any] = self.app.amqp.router.route(
            requested, message.task, tuple(message.args), message.kwargs
        )
        if routing.exchange is not None:
            options["exchange"] = routing.exchange
        if routing.routing_key is not None:
            options["routing_key"] = routing.routing_key
        if routing.priority is not None:
            options["priority"] = routing.priority
        return options
