"""Reading a run's recorded history back in integration tests."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from typing import Any

from bench.sinkfloor import noop_step_write
from runtime.checkpoint.batching import Checkpoint
from runtime.models import Event, Run, Step

LEASE_TOKEN = "mine"  # the lease the `leased_run` fixture's run is held with


class BodyCalls:
    """Counts step-body executions by label; safe to share between workflow threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def hit(self, label: str) -> None:
        with self._lock:
            self._counts[label] += 1

    def __getitem__(self, label: str) -> int:
        with self._lock:
            return self._counts[label]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


def run_row(run_id: uuid.UUID) -> Run:
    return Run.objects.get(id=run_id)


def events(run_id: uuid.UUID) -> list[Event]:
    """The run's event log in seq order, checked to be dense from 1 and to match last_seq."""
    log = list(Event.objects.filter(run_id=run_id).order_by("seq"))
    seqs = [e.seq for e in log]
    assert seqs == list(range(1, len(log) + 1)), f"event seqs are not dense: {seqs}"
    assert run_row(run_id).last_seq == len(log)
    return log


def event_types(run_id: uuid.UUID) -> list[str]:
    return [e.type for e in events(run_id)]


def steps(run_id: uuid.UUID) -> list[Step]:
    return list(Step.objects.filter(run_id=run_id).order_by("position"))


def step_at(run_id: uuid.UUID, position: int) -> Step:
    return Step.objects.get(run_id=run_id, position=position)


def payloads(run_id: uuid.UUID, event_type: str) -> list[dict[str, Any]]:
    return [e.payload for e in events(run_id) if e.type == event_type]


def noop_step_checkpoint(run_id: uuid.UUID, position: int) -> Checkpoint:
    """A synchronous checkpoint of a completed no-op step of a `leased_run`."""
    write = noop_step_write(run_id, position, LEASE_TOKEN)
    return Checkpoint(session="s", payload=write, size=1024, sync=True)
