"""tests.support.waiting: what it returns, when it gives up, how long a `stays_false` lasts."""

from __future__ import annotations

import itertools
import time

import pytest

from tests.support.waiting import stays_false, wait_until


def test_waiting_returns_the_first_true_value() -> None:
    calls = itertools.count()
    assert wait_until(lambda: next(calls) >= 3 and "ready", interval=0.001) == "ready"


def test_waiting_gives_up_naming_what_it_waited_for() -> None:
    with pytest.raises(TimeoutError, match="the moon"):
        wait_until(lambda: False, timeout=0.02, interval=0.005, message="the moon")


def test_waiting_stays_false_for_the_whole_span() -> None:
    began = time.monotonic()
    assert stays_false(lambda: False, for_seconds=0.03)
    assert time.monotonic() - began >= 0.03


def test_waiting_stays_false_fails_as_soon_as_it_holds() -> None:
    calls = itertools.count()
    began = time.monotonic()
    assert not stays_false(lambda: next(calls) == 2, for_seconds=30)
    assert time.monotonic() - began < 5
