"""A fresh process checkpoint writer for one test, closed (with its connection) afterwards.

The writer thread holds its own database connection; left open it would outlive the test and
keep pytest-django from dropping the test database.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import runtime.store
from runtime.checkpoint.process_local import ProcessLocal
from runtime.checkpoint.writer import CheckpointWriter


@contextmanager
def fresh_process_writer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    local: ProcessLocal[CheckpointWriter] = ProcessLocal(runtime.store._new_writer)
    monkeypatch.setattr(runtime.store, "_process_writer", local)
    try:
        yield
    finally:
        local.get().close(timeout=10)  # drains, then closes the writer thread's connection
