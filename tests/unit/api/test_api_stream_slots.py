"""The open-stream cap off PostgreSQL (counted in the process) and the slot's one release."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from api import stream_slots
from api.request_errors import TooManyStreams
from api.stream_slots import SlotHoldingStream, hold_stream_slot


@pytest.fixture
def off_postgres(monkeypatch: pytest.MonkeyPatch, fanfold_settings: Any) -> None:
    monkeypatch.setattr(stream_slots, "connection", SimpleNamespace(vendor="sqlite"))
    fanfold_settings(MAX_STREAMS_PER_USER=2)


def test_api_stream_slots_in_process_cap_per_user(off_postgres: None) -> None:
    held = [hold_stream_slot(7), hold_stream_slot(7)]
    with pytest.raises(TooManyStreams, match="FANFOLD_MAX_STREAMS_PER_USER"):
        hold_stream_slot(7)
    other = hold_stream_slot(8)
    held[0]()
    held[0]()  # a second release gives nothing more back
    again = hold_stream_slot(7)
    with pytest.raises(TooManyStreams):
        hold_stream_slot(7)
    for release in (held[1], other, again):
        release()


def test_api_stream_slots_closing_an_unread_stream_releases(off_postgres: None) -> None:
    released: list[bool] = []

    def events() -> Iterator[bytes]:
        yield b"never read"

    stream = SlotHoldingStream(events(), lambda: released.append(True))
    stream.close()
    assert released == [True]
