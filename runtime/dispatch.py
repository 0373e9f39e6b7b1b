"""Sending work to workers: the run-execution message, branch messages and their timers.

The send path is a leaf: messages go by task name through the Celery app that is current, and
nothing here imports the tasks module or starts threads. `Dispatcher` is the port; the
process uses `CeleryDispatcher` unless something else is installed with `install()` (tests use
`runtime.testing.use_dispatcher`). `runtime.apps` wires the embedded worker in as the
dispatcher's hook before each send.

A branch message is `fanfold.run_branch(run_id, position, attempt, group_position, poll)` with
the derived key `dispatch_key(run, position, attempt)` as its task id, so a republish of the
same attempt is recognisably the same message and loses its claim if the first one ran.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from celery import Celery, current_app
from kombu.exceptions import ChannelError

from publisher import CeleryTransport, Message, Transport, publish_messages
from publisher.messages import IDEMPOTENCY_HEADER
from runtime import conf
from runtime.core.fanin import BranchDispatch
from runtime.core.identity import dispatch_key

EXECUTE_RUN = "fanfold.execute_run"
RUN_BRANCH = "fanfold.run_branch"


class Dispatcher(Protocol):
    """Where the runtime sends its messages."""

    def enqueue_run(
        self, run_id: uuid.UUID, countdown: float | None = None, priority: int = 0
    ) -> None:
        """Ask a worker to execute (or resume) `run_id`, now or after `countdown` seconds;
        `priority` (0-9, higher first) becomes the message's priority where the broker has one."""

    def publish_branches(
        self, run_id: uuid.UUID, group_position: int, dispatches: Sequence[BranchDispatch]
    ) -> None:
        """Publish these branch attempts, delayed ones after their countdown; raises
        `publisher.PublishError` if any failed."""

    def queue_depth(self) -> int | None:
        """How many messages wait in the default queue now; None if that cannot be known."""


def branch_message(run_id: uuid.UUID, group_position: int, d: BranchDispatch) -> Message:
    """The task message of one attempt of one branch (of one poll, for a child branch)."""
    key = dispatch_key(run_id, d.position, d.attempt)
    args: list[object] = [str(run_id), d.position, d.attempt, group_position]
    if d.poll:
        key, args = f"{key}:poll:{d.poll}", [*args, d.poll]
    return Message(RUN_BRANCH, key, args=args)


def broker_priority(broker_url: str, priority: int) -> int | None:
    """A run's priority (0-9, higher first) as this broker's message priority, or None.

    AMQP (RabbitMQ) has the same scale, on a queue declared with x-max-priority. Redis does
    not get one: kombu's Redis transport sorts a message without a priority (every resume,
    every message of a run without one) as its highest, so a priority there could only
    demote a run below those. Other brokers have none.
    """
    scheme = broker_url.split("://", 1)[0].split("+")[0]
    if scheme in ("amqp", "amqps", "pyamqp"):
        return priority
    return None


class CeleryDispatcher:
    """Sends through the current Celery app; `before_send` runs first (the embedded worker).

    Branch messages go through `transport` when one is given (a `publisher` transport such as
    `publisher.fake.FakeTransport`), else through a `CeleryTransport` of the current app.
    """

    def __init__(
        self,
        before_send: Callable[[], None] | None = None,
        transport: Transport | None = None,
    ) -> None:
        self._before_send = before_send
        self._given_transport = transport
        self._transport: CeleryTransport | None = None

    def _app(self) -> Celery:
        if self._before_send is not None:
            self._before_send()
        return current_app._get_current_object()  # type: ignore[attr-defined]

    def enqueue_run(
        self, run_id: uuid.UUID, countdown: float | None = None, priority: int = 0
    ) -> None:
        # Duplicates are harmless: an execution that finds the lease taken or the run finished
        # does nothing.
        app = self._app()
        level = broker_priority(str(app.conf.broker_url or ""), priority) if priority else None
        app.send_task(
            EXECUTE_RUN,
            args=(str(run_id),),
            countdown=countdown or None,
            ignore_result=True,
            priority=level,
            queue=conf.get().RUN_QUEUE or None,
        )

    def publish_branches(
        self, run_id: uuid.UUID, group_position: int, dispatches: Sequence[BranchDispatch]
    ) -> None:
        """Those due now go in batches of `PUBLISH_BATCH_SIZE`, delayed ones one by one."""
        if not dispatches:
            return
        now = [d for d in dispatches if d.countdown <= 0]
        if now:
            batch_size = conf.get().PUBLISH_BATCH_SIZE
            transport = self._given_transport or self._celery_transport(batch_size)
            messages = [branch_message(run_id, group_position, d) for d in now]
            publish_messages(messages, transport, batch_size=batch_size)
        for d in dispatches:
            if d.countdown > 0:
                self._send_later(run_id, group_position, d)

    def _send_later(self, run_id: uuid.UUID, group_position: int, d: BranchDispatch) -> None:
        # The publisher's messages carry no ETA, so a delayed message goes through Celery.
        message = branch_message(run_id, group_position, d)
        self._app().send_task(
            message.task,
            args=message.args,
            task_id=message.idempotency_key,
            countdown=d.countdown,
            headers={IDEMPOTENCY_HEADER: message.idempotency_key},
            ignore_result=True,
        )

    def queue_depth(self) -> int | None:
        app = self._app()
        queue = app.conf.task_default_queue
        try:
            with app.connection_or_acquire() as connection:
                declared = connection.default_channel.queue_declare(queue, passive=True)
                return int(declared.message_count)
        except ChannelError:
            return 0  # no such queue yet (Redis keeps no key for an empty list): nothing waits
        except Exception:  # the broker is away: unknown
            return None

    def _celery_transport(self, batch_size: int) -> CeleryTransport:
        app = self._app()
        transport = self._transport
        if transport is None or transport.app is not app or transport.batch_size != batch_size:
            transport = self._transport = CeleryTransport(app, batch_size=batch_size)
        return transport


_dispatcher: Dispatcher = CeleryDispatcher()


def install(dispatcher: Dispatcher) -> Dispatcher:
    """Make `dispatcher` the process's dispatcher; returns the one it replaces."""
    global _dispatcher
    previous, _dispatcher = _dispatcher, dispatcher
    return previous


def current() -> Dispatcher:
    return _dispatcher


def enqueue_run(run_id: uuid.UUID, countdown: float | None = None, priority: int = 0) -> None:
    """Ask a worker to execute (or resume) `run_id`, now or after `countdown` seconds."""
    if priority:
        _dispatcher.enqueue_run(run_id, countdown, priority=priority)
    else:  # the common call, which dispatchers written before priorities also take
        _dispatcher.enqueue_run(run_id, countdown)


def publish_branches(
    run_id: uuid.UUID, group_position: int, dispatches: Sequence[BranchDispatch]
) -> None:
    """Publish these branch attempts; raises `publisher.PublishError` if any message failed
    (its `retryable` says whether trying again may help)."""
    _dispatcher.publish_branches(run_id, group_position, dispatches)


def publish_later(
    run_id: uuid.UUID,
    group_position: int,
    position: int,
    attempt: int,
    countdown: float,
    poll: int = 0,
) -> None:
    """Publish one branch attempt after `countdown` seconds (a retry, or a child's next poll)."""
    delayed = BranchDispatch(position, attempt, max(countdown, 0.0), poll)
    _dispatcher.publish_branches(run_id, group_position, [delayed])


def queue_depth() -> int | None:
    """How many messages wait in the broker's default queue; None if unknown."""
    return _dispatcher.queue_depth()
