"""HeldSignals: Python signal handlers run after a main-thread turn, never inside it."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from runtime.checkpoint import held_signals
from runtime.checkpoint.held_signals import HeldSignals


class Interrupted(Exception):
    pass


@pytest.fixture
def handlers() -> Iterator[list[int]]:
    """SIGUSR1 raises Interrupted (as a soft time limit does), SIGUSR2 is only noted."""
    seen: list[int] = []

    def raising(signum: int, frame: object) -> None:
        seen.append(signum)
        raise Interrupted

    saved = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP)}
    signal.signal(signal.SIGUSR1, raising)
    signal.signal(signal.SIGUSR2, lambda signum, frame: seen.append(signum))
    try:
        yield seen
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def test_a_signal_inside_the_block_is_handled_after_it(handlers: list[int]) -> None:
    finished = []
    with pytest.raises(Interrupted), HeldSignals():
        signal.raise_signal(signal.SIGUSR1)
        finished.append("the block ran to its end")

    assert finished == ["the block ran to its end"]
    assert handlers == [signal.SIGUSR1]


def test_the_original_handlers_are_back_after_the_block(handlers: list[int]) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT)}

    with HeldSignals():
        assert signal.getsignal(signal.SIGUSR1) is not before[signal.SIGUSR1]

    assert {s: signal.getsignal(s) for s in before} == before
    signal.raise_signal(signal.SIGUSR2)
    assert handlers == [signal.SIGUSR2]  # delivered at once again


def test_every_held_signal_is_delivered_even_when_one_raises(handlers: list[int]) -> None:
    with pytest.raises(Interrupted), HeldSignals():
        signal.raise_signal(signal.SIGUSR1)
        signal.raise_signal(signal.SIGUSR2)
        signal.raise_signal(signal.SIGUSR1)  # the same signal twice counts once
        assert handlers == []

    # SIGUSR2 came after the raising handler: it went to the process again, and its handler
    # runs at the interpreter's next check once a thread has taken the signal.
    deadline = time.monotonic() + 10
    while signal.SIGUSR2 not in handlers and time.monotonic() < deadline:
        time.sleep(0.001)
    assert handlers == [signal.SIGUSR1, signal.SIGUSR2]


def test_no_signal_means_nothing_is_delivered(handlers: list[int]) -> None:
    with HeldSignals():
        pass

    assert handlers == []


def test_default_and_ignored_dispositions_are_left_alone(handlers: list[int]) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)

    with HeldSignals():
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        signal.raise_signal(signal.SIGHUP)  # ignored, as it would be outside

    assert handlers == []


def test_an_exception_while_the_handlers_are_put_back_leaves_none_swapped(
    handlers: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = held_signals._signals
    interrupted: list[int] = []

    class InterruptedOnce:
        """Raises once when SIGUSR2's handler is put back, as a signal landing there would."""

        getsignal = staticmethod(real.getsignal)

        @staticmethod
        def signal(signum: int, handler: object) -> object:
            if signum == signal.SIGUSR2 and handler != held._note and not interrupted:
                interrupted.append(signum)
                raise Interrupted
            return real.signal(signum, handler)

    held = HeldSignals()
    originals = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGUSR2)}
    monkeypatch.setattr(held_signals, "_signals", InterruptedOnce)

    with pytest.raises(Interrupted), held:
        pass

    assert interrupted == [signal.SIGUSR2]
    assert {s: signal.getsignal(s) for s in originals} == originals
