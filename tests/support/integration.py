"""What several integration folders' conftests share: the PostgreSQL requirement, enqueues
recorded instead of sent, and a checkpoint sink that remembers its batches.

A conftest re-exports the fixtures it uses (`__all__`); tests import `RecordingSink` from
here, never from a conftest (several folders' conftests in one pytest process would clash).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

import pytest
from django.db import connection

from runtime import store
from runtime.checkpoint.batching import Checkpoint
from runtime.store.history.sink import DatabaseSink
from runtime.testing import use_dispatcher, use_writer
from tests.support.dispatch import Enqueued, RecordingDispatcher


def require_postgres(tests: str) -> None:
    """Skip the test (fail it on CI) unless the database is PostgreSQL; `tests` names them."""
    if connection.vendor == "postgresql":
        return
    # tests/conftest.py's DATABASE_URL default comes too late for pytest-django's settings.
    message = f"{tests} need PostgreSQL: export DATABASE_URL (scripts/test does)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


class RecordingSink(DatabaseSink):
    """The real database sink, remembering every batch it committed."""

    instances: list[RecordingSink] = []

    def __init__(self) -> None:
        super().__init__()
        self.committed: list[list[Checkpoint]] = []
        RecordingSink.instances.append(self)

    def write_batch(self, checkpoints: Sequence[Checkpoint]) -> list[object]:
        receipts = super().write_batch(checkpoints)
        self.committed.append(list(checkpoints))
        return receipts


@pytest.fixture
def enqueued() -> Iterator[Enqueued]:
    """Every `enqueue_run` call (start's after-commit and the executor's timers), recorded
    instead of sent to a broker."""
    with use_dispatcher(RecordingDispatcher()) as dispatcher:
        if not isinstance(dispatcher, RecordingDispatcher):
            raise TypeError(f"expected the recording dispatcher, got {dispatcher!r}")
        yield dispatcher.enqueued


@pytest.fixture
def sink() -> Iterator[Callable[[], RecordingSink]]:
    """A fresh process checkpoint writer whose sink records its batches; returns a getter for
    that sink."""
    RecordingSink.instances = []

    def current() -> RecordingSink:
        store.writer()
        return RecordingSink.instances[-1]

    with use_writer(RecordingSink):
        yield current
