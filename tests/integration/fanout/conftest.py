"""Fixtures for fan-out integration tests on real PostgreSQL, branches driven in-process.

Branch messages go to the publisher's FakeTransport instead of a broker; `Branches` delivers
them to `runtime.branches.run_branch` on a pool of threads, as workers would. Enqueues of the
workflow and delayed publishes (retries, child polls) are recorded.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from fanout_harness import Branches, Enqueued, Later

import runtime.branch_dispatch
import runtime.branches
import runtime.dispatch
import runtime.embedded
import runtime.fanout_sweep
import runtime.store
from publisher.fake import FakeTransport
from runtime import conf
from runtime.checkpoint.process_local import ProcessLocal
from runtime.checkpoint.writer import CheckpointWriter
from runtime.executor import Execution, execute


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
