"""BackgroundPublisher: submitted messages leave from its thread in batches, flush waits for
them, a failed batch is handed to on_failure, and a process that exits sends what it holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import pytest

from publisher.background import BackgroundPublisher, next_pace
from publisher.errors import PublishError
from publisher.fake import FakeTransport
from publisher.messages import Message, Outcome
from tests.support.waiting import wait_until
from tests.unit.publisher.conftest import MakeMessages

ROOT = Path(__file__).resolve().parents[3]


class GatedTransport(FakeTransport):
    """A fake whose requests wait until `gate` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.arrived: list[int] = []  # each request's size, as it reaches the gate

    def send(self, message: Message) -> Outcome:
        self.arrived.append(1)
        self.gate.wait(10)
        return super().send(message)

    def send_batch(self, messages: Sequence[Message]) -> list[Outcome]:
        self.arrived.append(len(messages))
        self.gate.wait(10)
        return super().send_batch(messages)


def test_background_publisher_sends_everything_in_order_in_batches(
    make_messages: MakeMessages,
) -> None:
    transport = GatedTransport()
    publisher = BackgroundPublisher(lambda: transport, batch_size=100, max_pending=300)
    messages = make_messages(251)
    for message in messages:
        publisher.submit(message)  # the first request waits at the gate, the rest queue
    assert publisher.pending() == 251
    transport.gate.set()
    assert publisher.flush(10)
    assert publisher.pending() == 0
    assert [m.idempotency_key for m in transport.delivered] == [m.idempotency_key for m in messages]
    sizes = [len(request.messages) for request in transport.requests]
    assert max(sizes) <= 100
    assert len(sizes) < len(messages)  # those queued meanwhile shared requests


def test_background_publisher_flush_times_out_while_a_request_hangs(
    make_messages: MakeMessages,
) -> None:
    transport = GatedTransport()
    publisher = BackgroundPublisher(lambda: transport)
    publisher.submit(make_messages(1)[0])
    assert not publisher.flush(0.05)
    transport.gate.set()
    assert publisher.flush(10)


def test_background_publisher_hands_a_failed_batch_to_on_failure(
    make_messages: MakeMessages,
) -> None:
    fake = FakeTransport()
    failed: list[tuple[list[str], Exception]] = []

    def on_failure(batch: Sequence[Message], exc: Exception) -> None:
        failed.append(([m.idempotency_key for m in batch], exc))

    publisher = BackgroundPublisher(lambda: fake, on_failure=on_failure)
    lost, kept = make_messages(2)
    fake.fail_next_request()
    publisher.submit(lost)
    assert publisher.flush(10)
    publisher.submit(kept)
    assert publisher.flush(10)
    assert [keys for keys, _ in failed] == [[lost.idempotency_key]]
    assert isinstance(failed[0][1], PublishError)
    assert [m.idempotency_key for m in fake.delivered] == [kept.idempotency_key]


def test_background_publisher_sends_what_it_holds_when_the_process_exits(tmp_path: Path) -> None:
    sent = tmp_path / "sent.txt"
    script = textwrap.dedent(
        f"""
        import time
        from publisher.background import BackgroundPublisher
        from publisher.messages import Message, Outcome

        class SlowTransport:
            def send(self, message):
                return self.send_batch([message])[0]

            def send_batch(self, messages):
                time.sleep(0.3)  # still sending when the main thread ends
                with open({str(sent)!r}, "a") as out:
                    out.writelines(m.idempotency_key + "\\n" for m in messages)
                return [Outcome.sent(m.idempotency_key) for m in messages]

        publisher = BackgroundPublisher(SlowTransport)
        for key in ("a", "b"):
            publisher.submit(Message("tests.task", key))
        """
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60)
    assert sent.read_text().split() == ["a", "b"]


def test_background_publisher_holds_submit_back_while_too_many_wait(
    make_messages: MakeMessages,
) -> None:
    transport = GatedTransport()
    publisher = BackgroundPublisher(lambda: transport, max_pending=3)
    first, *more = make_messages(4)
    publisher.submit(first)
    for message in more[:2]:
        publisher.submit(message)
    done = threading.Event()
    late = threading.Thread(target=lambda: (publisher.submit(more[2]), done.set()))
    late.start()
    assert not done.wait(0.2)  # three wait (one in a hung request): the fourth is held back
    transport.gate.set()
    assert done.wait(10)
    late.join(10)
    assert publisher.flush(10)
    assert len(transport.delivered) == 4


def test_background_publisher_publishes_what_combine_makes_of_a_batch(
    make_messages: MakeMessages,
) -> None:
    transport = GatedTransport()
    taken: list[list[str]] = []

    def combine(batch: list[Message]) -> list[Message]:
        taken.append([m.idempotency_key for m in batch])
        return [Message("tests.many", f"{batch[0].idempotency_key}:n{len(batch)}")]

    publisher = BackgroundPublisher(lambda: transport, combine=combine)
    first, *rest = make_messages(5)
    publisher.submit(first)
    wait_until(lambda: bool(taken), interval=0.005)  # the first request waits at the gate
    for message in rest:
        publisher.submit(message)  # these queue meanwhile
    transport.gate.set()
    assert publisher.flush(10)
    assert taken == [["m0"], ["m1", "m2", "m3", "m4"]]
    assert [m.idempotency_key for m in transport.delivered] == ["m0:n1", "m1:n4"]
    assert publisher.pending() == 0


def test_background_publisher_lingers_between_requests_of_a_stream(
    make_messages: MakeMessages,
) -> None:
    transport = GatedTransport()
    publisher = BackgroundPublisher(lambda: transport, linger=3600.0)
    first, *burst = make_messages(6)
    publisher.submit(first)  # after a quiet spell: at once (it waits at the gate)
    wait_until(lambda: transport.arrived == [1], interval=0.005)
    for message in burst[:3]:
        publisher.submit(message)  # they queue behind the first request
    transport.gate.set()
    # After a request of one message the next leaves at once, with all that queued meanwhile.
    wait_until(lambda: len(transport.delivered) == 4, interval=0.005)
    for message in burst[3:]:
        publisher.submit(message)  # within the linger of a request of several: they wait
    threading.Event().wait(0.2)
    assert len(transport.requests) == 2 and publisher.pending() == 2
    assert publisher.flush(10)  # a flush cuts the linger short
    assert [len(request.messages) for request in transport.requests] == [1, 3, 2]


def test_background_publisher_sends_lone_messages_at_once_whatever_the_linger(
    make_messages: MakeMessages,
) -> None:
    fake = FakeTransport()
    publisher = BackgroundPublisher(lambda: fake, linger=3600.0)

    def delivered(count: int) -> Callable[[], bool]:
        return lambda: len(fake.delivered) == count

    for n, message in enumerate(make_messages(3), start=1):
        publisher.submit(message)  # one at a time, each after the last left: a caller in turn
        wait_until(delivered(n), interval=0.005)
    assert [len(request.messages) for request in fake.requests] == [1, 1, 1]


def test_background_publisher_lingers_after_a_lone_message_of_a_stream(
    make_messages: MakeMessages,
) -> None:
    fake = FakeTransport()
    publisher = BackgroundPublisher(lambda: fake, linger=3600.0)
    first, *rest = make_messages(4)
    publisher.submit(first, stream=True)  # after a quiet spell: at once, alone
    wait_until(lambda: len(fake.delivered) == 1, interval=0.005)
    for message in rest:
        publisher.submit(message, stream=True)  # within the linger of a stream's request
    threading.Event().wait(0.2)
    assert len(fake.requests) == 1 and publisher.pending() == 3
    assert publisher.flush(10)
    assert [len(request.messages) for request in fake.requests] == [1, 3]


def test_a_lingering_publisher_is_woken_only_once_its_batch_is_full(
    make_messages: MakeMessages,
) -> None:
    fake = FakeTransport()
    publisher = BackgroundPublisher(lambda: fake, batch_size=4, linger=3600.0)
    woken_by_submits: list[int] = []
    notify_all = publisher._cond.notify_all

    def counted() -> None:
        if threading.current_thread() is threading.main_thread():
            woken_by_submits.append(len(publisher._queue))
        notify_all()

    publisher._cond.notify_all = counted  # type: ignore[method-assign]
    first, *rest = make_messages(5)
    publisher.submit(first, stream=True)  # after a quiet spell: at once, alone
    wait_until(lambda: len(fake.delivered) == 1, interval=0.005)
    for message in rest[:3]:
        publisher.submit(message, stream=True)  # lingering: only the first wakes the thread
    threading.Event().wait(0.1)
    assert publisher.pending() == 3
    publisher.submit(rest[3], stream=True)  # the batch is full: it leaves at once
    wait_until(lambda: len(fake.delivered) == 5, interval=0.005)
    assert woken_by_submits == [1, 1, 4]
    assert [len(request.messages) for request in fake.requests] == [1, 4]


def test_a_streams_pace_doubles_while_its_requests_carry_several() -> None:
    pace = next_pace(0.01, 0.011, 5, linger=0.01, max_linger=0.05)
    assert pace == 0.02
    pace = next_pace(pace, 0.021, 5, linger=0.01, max_linger=0.05)
    assert pace == 0.04
    assert next_pace(pace, 0.041, 5, linger=0.01, max_linger=0.05) == 0.05  # capped


def test_a_streams_pace_falls_back_after_a_lone_message_or_a_quiet_spell() -> None:
    assert next_pace(0.04, 0.041, 1, linger=0.01, max_linger=0.05) == 0.01
    assert next_pace(0.04, 0.081, 5, linger=0.01, max_linger=0.05) == 0.01
    assert next_pace(0.04, float("inf"), 5, linger=0.01, max_linger=0.05) == 0.01  # the first
    # Without a max_linger the pace stays the linger, as before.
    assert next_pace(0.01, 0.011, 5, linger=0.01, max_linger=0.01) == 0.01


def test_background_publisher_paces_a_stream_of_full_requests_slower(
    make_messages: MakeMessages,
) -> None:
    fake = FakeTransport()
    publisher = BackgroundPublisher(lambda: fake, linger=0.3, max_linger=3600.0)
    first, *pairs = make_messages(7)
    publisher.submit(first, stream=True)  # after a quiet spell: at once, alone
    wait_until(lambda: len(fake.delivered) == 1, interval=0.005)
    for n in (2, 4):  # each pair waits out the pace (0.3 s, then 0.6 s) and leaves together
        for message in pairs[n - 2 : n]:
            publisher.submit(message, stream=True)
        wait_until(partial(_delivered, fake, 1 + n), interval=0.005)
    for message in pairs[4:]:
        publisher.submit(message, stream=True)
    # Two requests of several in a row: the pace is 1.2 s now, no longer the 0.6 s before.
    threading.Event().wait(0.9)
    assert publisher.pending() == 2
    assert publisher.flush(10)  # a flush cuts the linger short
    assert [len(request.messages) for request in fake.requests] == [1, 2, 2, 2]


def _delivered(fake: FakeTransport, count: int) -> bool:
    return len(fake.delivered) == count


def test_background_publisher_refuses_a_max_linger_below_its_linger() -> None:
    with pytest.raises(ValueError, match="max_linger"):
        BackgroundPublisher(FakeTransport, linger=0.5, max_linger=0.1)
