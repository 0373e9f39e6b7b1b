"""Fixtures for fan-out integration tests on real PostgreSQL, branches driven in-process.

Branch messages go to the publisher's FakeTransport instead of a broker; `Branches` delivers
them to `runtime.branches.run_branch` on a pool of threads, as workers would. Enqueues of the
workflow and delayed publishes (retries, child polls) are recorded.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connection

import runtime.branch_dispatch
import runtime.branches
import runtime.dispatch
import runtime.embedded
import runtime.fanout_sweep
import runtime.store
from publisher.fake import FakeTransport
from publisher.messages import Message
from runtime import conf
from runtime.checkpoint.process_local import ProcessLocal
from runtime.checkpoint.writer import CheckpointWriter
from runtime.executor import Execution, execute


@dataclass
class Enqueued:
    calls: list[tuple[uuid.UUID, float | None]] = field(default_factory=list)

    def __call__(self, run_id: uuid.UUID, countdown: float | None = None) -> None:
        self.calls.append((run_id, countdown))

    def count(self, run_id: uuid.UUID) -> int:
        return sum(1 for rid, _ in self.calls if rid == run_id)


@dataclass
class Later:
    """Delayed publishes: (run_id, group_first, position, attempt, countdown, poll)."""

    calls: list[tuple[uuid.UUID, int, int, int, float, int]] = field(default_factory=list)

    def __call__(self, *args: Any) -> None:
        self.calls.append(tuple(args) + (0,) * (6 - len(args)))  # type: ignore[arg-type]


class Branches:
    """Delivers published branch messages to run_branch, like a pool of workers would."""

    def __init__(self, fake: FakeTransport, later: Later) -> None:
        self.fake = fake
        self.later = later
        self.delivered = 0
        self.outcomes: list[str] = []

    def pending(self) -> list[Message]:
        return self.fake.delivered[self.delivered :]

    def deliver(self, messages: Sequence[Message], threads: int = 8, times: int = 1) -> None:
        work = [m for m in messages for _ in range(times)]

        def one(message: Message) -> str:
            try:
                run_id, position, attempt, group_first, *poll = message.args
                return runtime.branches.run_branch(
                    uuid.UUID(run_id), position, attempt, group_first, *poll
                )
            finally:
                connection.close()

        with ThreadPoolExecutor(max_workers=threads) as pool:
            self.outcomes.extend(pool.map(one, work))

    def drain(self, threads: int = 8, times: int = 1) -> None:
        """Deliver every published message (and what their completions publish) until none."""
        while self.pending():
            batch = self.pending()
            self.delivered += len(batch)
            self.deliver(batch, threads, times)

    def deliver_later(self, threads: int = 8) -> None:
        """Deliver the delayed publishes recorded so far (ignoring their countdown)."""
        calls, self.later.calls[:] = list(self.later.calls), []
        messages = [
            Message("fanfold.run_branch", f"later-{i}", args=[str(r), p, a, g, poll])
            for i, (r, g, p, a, _, poll) in enumerate(calls)
        ]
        self.deliver(messages, threads)


@pytest.fixture(autouse=True)
def _integration(transactional_db: None) -> Iterator[None]:
    conf.reset()
    yield
    conf.reset()


@pytest.fixture(autouse=True)
def writer(_integration: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    local: ProcessLocal[CheckpointWriter] = ProcessLocal(runtime.store._new_writer)
    monkeypatch.setattr(runtime.store, "_process_writer", local)
    yield
    local.get().close(timeout=10)


@pytest.fixture(autouse=True)
def enqueued(monkeypatch: pytest.MonkeyPatch) -> Enqueued:
    recorder = Enqueued()
    monkeypatch.setattr(runtime.dispatch, "enqueue_run", recorder)
    return recorder


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeTransport:
    transport = FakeTransport()
    monkeypatch.setattr(runtime.branch_dispatch, "_transport", lambda batch_size: transport)
    monkeypatch.setattr(runtime.embedded, "ensure_worker", lambda: None)
    monkeypatch.setattr(runtime.fanout_sweep, "start_fanout_sweeper", lambda: None)
    return transport


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> Later:
    recorder = Later()
    monkeypatch.setattr(runtime.branches, "publish_later", recorder)
    return recorder


@pytest.fixture
def branches(fake: FakeTransport, later: Later) -> Branches:
    return Branches(fake, later)


@pytest.fixture
def run_now() -> Callable[[uuid.UUID], Execution]:
    return execute


@pytest.fixture(scope="session", autouse=True)
def _close_stray_connections(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Writer and worker threads keep connections open; the test database can only be
    dropped once they are gone."""
    yield
    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
