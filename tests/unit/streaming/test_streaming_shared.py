"""SharedLooks: readers asking the same question share one look; others ask their own."""

from __future__ import annotations

import threading
import uuid

import pytest

from runtime.streaming.shared import SharedLooks


def test_streaming_shared_same_question_is_asked_once() -> None:
    looks: SharedLooks[list[int]] = SharedLooks()
    run = uuid.uuid4()
    asked: list[int] = []
    release = threading.Event()

    def ask() -> list[int]:
        asked.append(1)
        release.wait(5)
        return [1, 2]

    answers: list[list[int]] = []
    readers = [
        threading.Thread(target=lambda: answers.append(looks.look(run, "s", (0, (0, 1)), ask)))
        for _ in range(5)
    ]
    for r in readers:
        r.start()
    release.set()
    for r in readers:
        r.join(5)
    assert answers == [[1, 2]] * 5
    assert len(asked) == 1


def test_streaming_shared_another_seq_or_generation_asks_again() -> None:
    looks: SharedLooks[int] = SharedLooks()
    run = uuid.uuid4()
    counter = iter(range(100))
    assert looks.look(run, "s", (0, (0, 1)), lambda: next(counter)) == 0
    assert looks.look(run, "s", (0, (0, 1)), lambda: next(counter)) == 0  # the same answer
    assert looks.look(run, "s", (0, (0, 2)), lambda: next(counter)) == 1  # a newer signal
    assert looks.look(run, "s", (5, (0, 2)), lambda: next(counter)) == 2  # another seq
    assert looks.look(run, "other", (5, (0, 2)), lambda: next(counter)) == 3  # another stream


def test_streaming_shared_failed_look_is_not_handed_to_later_readers() -> None:
    looks: SharedLooks[int] = SharedLooks()
    run = uuid.uuid4()

    def broken() -> int:
        raise ConnectionError("database went away")

    with pytest.raises(ConnectionError):
        looks.look(run, "s", (0, (0, 0)), broken)
    assert looks.look(run, "s", (0, (0, 0)), lambda: 7) == 7
