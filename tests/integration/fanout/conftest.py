"""Fixtures for fan-out integration tests on real PostgreSQL, branches driven in-process.

Branch messages go to the publisher's FakeTransport instead of a broker; `Branches` delivers
them to `runtime.fanout.branch.run_branch` on a pool of threads, as workers would. Enqueues of the
workflow and delayed publishes (retries, child polls) are recorded.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from fanout_harness import Branches
from fanout_workflows import FAIL, RESHAPE, calls

from publisher.fake import FakeTransport
from runtime import conf
from runtime.executor import Execution, execute
from runtime.testing import use_dispatcher, use_writer
from tests.support.dispatch import Enqueued, Later, RecordingDispatcher


@pytest.fixture(autouse=True)
def _integration(transactional_db: None) -> Iterator[None]:
    conf.reset()
    yield
    conf.reset()


@pytest.fixture(autouse=True)
def _fresh_workflow_state() -> Iterator[None]:
    """The body-call counter and the switches the fan-out workflows read start empty."""
    for state in (calls, FAIL, RESHAPE):
        state.clear()
    yield
    FAIL.clear()
    RESHAPE.clear()


@pytest.fixture(autouse=True)
def writer(_integration: None) -> Iterator[None]:
    with use_writer():
        yield


@pytest.fixture(autouse=True)
def dispatcher() -> Iterator[RecordingDispatcher]:
    """Branches go to a fake transport; enqueues and delayed publishes are recorded."""
    recording = RecordingDispatcher()
    with use_dispatcher(recording):
        yield recording


@pytest.fixture
def enqueued(dispatcher: RecordingDispatcher) -> Enqueued:
    return dispatcher.enqueued


@pytest.fixture
def fake(dispatcher: RecordingDispatcher) -> FakeTransport:
    assert isinstance(dispatcher.transport, FakeTransport)
    return dispatcher.transport


@pytest.fixture
def later(dispatcher: RecordingDispatcher) -> Later:
    return dispatcher.later


@pytest.fixture
def branches(fake: FakeTransport, later: Later) -> Branches:
    return Branches(fake, later)


@pytest.fixture
def run_now() -> Callable[[uuid.UUID], Execution]:
    return execute
