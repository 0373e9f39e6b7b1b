"""BackgroundLoop: one start per process, a failing pass does not end it, retire and stop."""

from __future__ import annotations

import threading

import pytest

from runtime.leases.keepers import LeaseKeeper
from runtime.process.background import BackgroundLoop
from tests.support.waiting import wait_until


def test_loop_start_is_idempotent_and_passes_repeat() -> None:
    passes: list[str] = []
    loop = BackgroundLoop(
        "test-loop", lambda: 0.01, lambda: passes.append(threading.current_thread().name)
    )
    loop.start()
    loop.start()
    try:
        wait_until(lambda: len(passes) >= 3, 5, interval=0.005)
        assert set(passes) == {"test-loop"}
        assert [t.name for t in threading.enumerate()].count("test-loop") == 1
    finally:
        loop.stop()
    assert not loop.running


def test_loop_a_failing_pass_does_not_end_it() -> None:
    calls: list[int] = []

    def body() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a database hiccup")

    loop = BackgroundLoop("test-failing", lambda: 0.01, body)
    loop.start()
    try:
        wait_until(lambda: len(calls) >= 3, 5, interval=0.005)
    finally:
        loop.stop()


def test_loop_retired_from_a_pass_starts_again_on_the_next_start() -> None:
    calls: list[int] = []
    loop: BackgroundLoop

    def body() -> None:
        calls.append(1)
        loop.retire()

    loop = BackgroundLoop("test-retire", lambda: 0.01, body)
    loop.start()
    wait_until(lambda: not loop.running, 5, interval=0.005)
    assert len(calls) == 1
    loop.start()
    wait_until(lambda: len(calls) == 2, 5, interval=0.005)
    loop.stop()


def test_lease_keeper_renews_held_keys_and_retires_when_idle(settings: object) -> None:
    renewed: list[list[str]] = []

    def renew(keys: list[str], until: object) -> int:
        renewed.append(sorted(keys))
        return len(keys)

    keeper: LeaseKeeper[str] = LeaseKeeper("test-leases", renew)
    keeper.hold("a")
    keeper.hold("a")
    keeper.hold("b")
    keeper.release("a")
    assert keeper.beat_once() == 2 and renewed[-1] == ["a", "b"]
    keeper.release("a")
    keeper.release("b")
    assert keeper.beat_once() == 0
    wait_until(lambda: not keeper.running, 10, interval=0.005)  # idle: the thread retires
    keeper.hold("c")
    assert keeper.running  # and a new hold starts it again
    keeper.release("c")


@pytest.fixture(autouse=True)
def _short_lease(settings: object) -> None:
    settings.FANFOLD = {"LEASE_SECONDS": "0.3"}  # type: ignore[attr-defined]
