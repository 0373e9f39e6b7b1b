"""Sending work to workers: the run-execution message, branch messages and their timers.

The send path is a leaf: messages go by task name through the current Celery app, nothing
here imports the tasks module, the one thread is the publisher's of `enqueue_run_soon`.
`Dispatcher` is the port; the process uses `CeleryDispatcher` unless another is installed
(`install()`; tests: `runtime.testing.use_dispatcher`). `runtime.apps` builds it with the
embedded worker as its hook before each send and the apps' run routing (`RunRouting`: a
run's Celery queue); nothing here reads the database (tests/unit/architecture checks so).

Branch messages are made in runtime.core.branch_messages.

Every message carries its run's priority as the broker's message priority where it has one
(runtime.core.broker_priority); a pinned run's go to its version's queues.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from celery import Celery, current_app
from kombu.exceptions import ChannelError

from publisher import CeleryTransport, Message, Transport, publish_messages
from publisher.background import BackgroundPublisher
from publisher.messages import IDEMPOTENCY_HEADER, Routing
from runtime import conf
from runtime.core import run_batches
from runtime.core.branch_dispatch import BranchDispatch
from runtime.core.branch_messages import RUN_BRANCH as RUN_BRANCH
from runtime.core.branch_messages import branch_message as branch_message
from runtime.core.broker_priority import broker_priority
from runtime.core.versions import version_queue

EXECUTE_RUN = "fanfold.execute_run"
EXECUTE_RUNS = "fanfold.execute_runs"  # several runs' starts (runtime.core.run_batches)


class Dispatcher(Protocol):
    """Where the runtime sends its messages."""

    def enqueue_run(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,
    ) -> None:
        """Ask a worker to execute (or resume) `run_id`, now or after `countdown` seconds;
        `priority` (0-9, higher first) becomes the message's priority where the broker has one.
        `queue`: a worker node's warm queue (runtime.warm.routing) instead of the run's."""

    def publish_branches(
        self,
        run_id: uuid.UUID,
        group_position: int,
        dispatches: Sequence[BranchDispatch],
        priority: int = 0,
    ) -> None:
        """Publish these branch attempts of a run of `priority`, delayed ones after their
        countdown; raises `publisher.PublishError` if any failed."""

    def queue_depth(self, queue: str | None = None) -> int | None:
        """How many messages wait in `queue` (None: the default queue) now; None if that
        cannot be known."""


# A run's Celery queue, if not the run queue's: a Django task's (runtime.django_tasks.queues).
RunRouting = Callable[[uuid.UUID], str | None]
# The deployment version a run is pinned to ("" for none: runtime.versions.routing).
VersionRouting = Callable[[uuid.UUID], str]


class CeleryDispatcher:
    """Sends through the current Celery app; `before_send` runs first (the embedded worker).

    Branch messages go through `transport` when one is given (a `publisher` transport such as
    `publisher.fake.FakeTransport`), else through a `CeleryTransport` of the current app. A
    run's execution messages go to `route(run_id)` when that names a queue, else to the run
    queue (FANFOLD_RUN_QUEUE, else Celery's default queue). With `version` (the version a run
    is pinned to), every message of a pinned run goes to that version's variant of its queue
    (runtime.core.versions.version_queue), which only workers serving it consume.
    """

    def __init__(
        self,
        before_send: Callable[[], None] | None = None,
        transport: Transport | None = None,
        route: RunRouting | None = None,
        version: VersionRouting | None = None,
    ) -> None:
        self._before_send = before_send
        self._route = route
        self._version = version
        self._given_transport = transport
        self._transport: CeleryTransport | None = None
        self._background = BackgroundPublisher(
            lambda: transport or self._celery_transport(conf.get().PUBLISH_BATCH_SIZE),
            **run_batches.publisher_options(EXECUTE_RUN, EXECUTE_RUNS),
        )

    def _app(self) -> Celery:
        if self._before_send is not None:
            self._before_send()
        return current_app._get_current_object()  # type: ignore[attr-defined]

    def enqueue_run(
        self,
        run_id: uuid.UUID,
        countdown: float | None = None,
        priority: int = 0,
        queue: str | None = None,
    ) -> None:
        # Duplicates are harmless: an execution that finds the lease taken or the run finished
        # does nothing.
        app = self._app()
        app.send_task(
            EXECUTE_RUN,
            args=(str(run_id),),
            countdown=countdown or None,
            ignore_result=True,
            priority=self._level(app, priority),
            queue=queue or self.run_queue(run_id),
        )

    def enqueue_run_soon(
        self,
        run_id: uuid.UUID,
        priority: int = 0,
        queue: str | None = None,
        stream: bool = False,
    ) -> None:
        """`enqueue_run` without waiting for the broker: the message leaves from a thread,
        batched with others (the embedded broker's at once; a `stream` start may linger to
        leave with the next). Only for a committed run: a lost one is sent again by the sweep."""
        app = self._app()
        broker_url = str(app.conf.broker_url or "")  # read once: Celery looks it up slowly
        if broker_url.startswith("memory://"):
            self.enqueue_run(run_id, priority=priority)
            return
        level = broker_priority(broker_url, priority)
        routing = Routing(queue=queue or self.run_queue(run_id), priority=level)
        key = f"{run_id}:start"  # derived: a copy the sweep sends has an id of its own
        kwargs: dict[str, object] = {"priority": priority} if priority else {}
        message = Message(EXECUTE_RUN, key, [str(run_id)], kwargs, routing=routing)
        self._background.submit(message, stream=stream)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the messages `enqueue_run_soon` took were sent; False on time-out."""
        return self._background.flush(timeout)

    def publish_branches(
        self,
        run_id: uuid.UUID,
        group_position: int,
        dispatches: Sequence[BranchDispatch],
        priority: int = 0,
    ) -> None:
        """Those due now go in batches of `PUBLISH_BATCH_SIZE`, delayed ones one by one."""
        if not dispatches:
            return
        level = self._level(self._app(), priority)
        queue = self.branch_queue(run_id)
        now = [d for d in dispatches if d.countdown <= 0]
        if now:
            batch_size = conf.get().PUBLISH_BATCH_SIZE
            transport = self._given_transport or self._celery_transport(batch_size)
            made = [branch_message(run_id, group_position, d, priority, level, queue) for d in now]
            publish_messages(made, transport, batch_size=batch_size)
        for d in dispatches:
            if d.countdown > 0:
                later = branch_message(run_id, group_position, d, priority, level, queue)
                self._send_later(later, d)

    def _send_later(self, message: Message, d: BranchDispatch) -> None:
        # The publisher's messages carry no ETA, so a delayed message goes through Celery.
        self._app().send_task(
            message.task,
            args=message.args,
            kwargs=message.kwargs,
            task_id=message.idempotency_key,
            countdown=d.countdown,
            headers={IDEMPOTENCY_HEADER: message.idempotency_key},
            ignore_result=True,
            priority=message.routing.priority,
            queue=message.routing.queue,
        )

    def run_queue(self, run_id: uuid.UUID) -> str | None:
        """The Celery queue of `run_id`'s execution messages; None is Celery's default queue."""
        routed = self._route(run_id) if self._route is not None else None
        return self._pinned(run_id, routed or conf.get().RUN_QUEUE or None)

    def branch_queue(self, run_id: uuid.UUID) -> str | None:
        """The Celery queue of `run_id`'s branch messages; None is Celery's default queue."""
        return self._pinned(run_id, None)

    def _pinned(self, run_id: uuid.UUID, queue: str | None) -> str | None:
        version = self._version(run_id) if self._version is not None else ""
        if not version:
            return queue
        default = current_app.conf.task_default_queue
        return version_queue(queue or default, version)

    def _level(self, app: Celery, priority: int) -> int | None:
        return broker_priority(str(app.conf.broker_url or ""), priority)

    def queue_depth(self, queue: str | None = None) -> int | None:
        app = self._app()
        queue = queue or app.conf.task_default_queue
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


def enqueue_run(
    run_id: uuid.UUID,
    countdown: float | None = None,
    priority: int = 0,
    queue: str | None = None,
) -> None:
    """Ask a worker to execute (or resume) `run_id`, now or after `countdown` seconds; to
    `queue` (a worker node's warm queue) when given, else to the run's queue."""
    _dispatcher.enqueue_run(run_id, countdown, priority=priority, queue=queue)


def enqueue_run_soon(
    run_id: uuid.UUID, priority: int = 0, queue: str | None = None, *, stream: bool = False
) -> None:
    """`enqueue_run` for a run whose row is committed, without waiting for the broker where
    the dispatcher can (a message lost on the way is sent again by the run sweep); `stream`:
    a start, which may wait a moment to leave with the next (a loop of task enqueues)."""
    if soon := getattr(_dispatcher, "enqueue_run_soon", None):
        return soon(run_id, priority=priority, queue=queue, stream=stream)
    _dispatcher.enqueue_run(run_id, priority=priority, queue=queue)


def flush(timeout: float | None = None) -> bool:
    """Wait until the messages sent by `enqueue_run_soon` have left; False on time-out."""
    return bool(getattr(_dispatcher, "flush", lambda _: True)(timeout))


def publish_branches(
    run_id: uuid.UUID,
    group_position: int,
    dispatches: Sequence[BranchDispatch],
    priority: int = 0,
) -> None:
    """Publish these branch attempts of a run of `priority`; raises `publisher.PublishError`
    if any message failed (its `retryable` says whether trying again may help)."""
    _dispatcher.publish_branches(run_id, group_position, dispatches, priority=priority)


def publish_later(
    run_id: uuid.UUID,
    group_position: int,
    position: int,
    attempt: int,
    countdown: float,
    poll: int = 0,
    priority: int = 0,
) -> None:
    """Publish one branch attempt after `countdown` seconds (a retry, or a child's next poll)."""
    delayed = BranchDispatch(position, attempt, max(countdown, 0.0), poll)
    publish_branches(run_id, group_position, [delayed], priority)


def queue_depth(queue: str | None = None) -> int | None:
    """How many messages wait in the broker's `queue` (None: the default one); None if unknown."""
    return _dispatcher.queue_depth(queue)
