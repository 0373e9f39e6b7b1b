"""worker_pool: Celery's prefetch reduction after a reconnect is turned off only under pools
that acknowledge tasks off the consumer's thread."""

from __future__ import annotations

import pytest
from celery import Celery
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.concurrency.solo import TaskPool as SoloPool
from celery.concurrency.thread import TaskPool as ThreadPool

from runtime import tasks
from runtime.worker.prefetch import make_reconnect_safe, pool_kind


def _pool(cls: type) -> object:
    return object.__new__(cls)  # only its class is looked at: no threads or processes started


def test_worker_pool_kind_is_the_pool_module() -> None:
    assert pool_kind(_pool(ThreadPool)) == "thread"
    assert pool_kind(_pool(PreforkPool)) == "prefork"
    assert pool_kind(_pool(SoloPool)) == "solo"


def test_worker_pool_threads_turn_the_prefetch_reduction_off() -> None:
    app = Celery("t", set_as_current=False)
    assert app.conf.worker_enable_prefetch_count_reduction is True  # Celery's default
    assert make_reconnect_safe(app, _pool(ThreadPool)) is True
    assert app.conf.worker_enable_prefetch_count_reduction is False
    assert make_reconnect_safe(app, _pool(ThreadPool)) is False  # already off: nothing to do


@pytest.mark.parametrize("cls", [PreforkPool, SoloPool])
def test_worker_pool_consumer_thread_pools_keep_the_reduction(cls: type) -> None:
    app = Celery("t", set_as_current=False)
    assert make_reconnect_safe(app, _pool(cls)) is False
    assert app.conf.worker_enable_prefetch_count_reduction is True


def test_worker_pool_worker_ready_applies_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker_ready handler is what a real worker runs; its sender is the consumer.
    monkeypatch.setattr(tasks, "start_sweeps", lambda: None)
    app = Celery("t", set_as_current=False)

    class Consumer:
        def __init__(self) -> None:
            self.app = app
            self.pool = _pool(ThreadPool)

    tasks._start_sweeps(sender=Consumer())
    assert app.conf.worker_enable_prefetch_count_reduction is False
