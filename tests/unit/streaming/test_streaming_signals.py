"""RunSignals: a signal between looking and waiting is never lost; waits stay bounded."""

from __future__ import annotations

import threading
import uuid

from runtime.streaming.wakeups import RunSignals
from tests.support.waiting import wait_until


def test_streaming_signals_signal_before_wait_is_not_lost() -> None:
    hub, run = RunSignals(), uuid.uuid4()
    hub.watch(run)
    seen = hub.seen(run)
    hub.signal(run)  # lands after the look, before the wait
    assert hub.wait(run, seen, timeout=5.0) is True
    hub.unwatch(run)


def test_streaming_signals_wait_times_out_without_a_signal() -> None:
    hub, run = RunSignals(), uuid.uuid4()
    hub.watch(run)
    assert hub.wait(run, hub.seen(run), timeout=0.05) is False
    hub.unwatch(run)


def test_streaming_signals_other_runs_do_not_wake_a_waiter() -> None:
    hub, run, other = RunSignals(), uuid.uuid4(), uuid.uuid4()
    hub.watch(run)
    seen = hub.seen(run)
    hub.signal(other)
    assert hub.wait(run, seen, timeout=0.05) is False
    hub.unwatch(run)


def test_streaming_signals_wake_a_blocked_waiter_from_another_thread() -> None:
    hub, run = RunSignals(), uuid.uuid4()
    hub.watch(run)
    seen = hub.seen(run)
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(hub.wait(run, seen, timeout=30)))
    waiter.start()
    # Blocked: it counts as the run's second waiter (watch() was the first) from the moment it
    # holds the hub's lock until it waits, so the signal below finds it waiting.
    wait_until(lambda: hub._waiters.get(str(run)) == 2, interval=0.001, message="the waiter")
    hub.signal(str(run))  # the listener hands over the notification's text payload
    waiter.join(30)
    assert woke == [True]
    hub.unwatch(run)


def test_streaming_signals_signal_all_wakes_every_waiter() -> None:
    hub, run = RunSignals(), uuid.uuid4()
    hub.watch(run)
    seen = hub.seen(run)
    hub.signal_all()  # the listener reconnected: anything may have been missed
    assert hub.wait(run, seen, timeout=5.0) is True
    hub.unwatch(run)


def test_streaming_signals_forget_runs_nobody_watches() -> None:
    hub, run = RunSignals(), uuid.uuid4()
    hub.signal(run)
    hub.watch(run)
    hub.unwatch(run)
    assert hub._generations == {} and hub._waiters == {}
