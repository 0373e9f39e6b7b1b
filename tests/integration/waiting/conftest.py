"""Waiting tests drive executions by hand: enqueueing is recorded, never sent to a worker."""

from __future__ import annotations

from tests.support.driven_by_hand import clock, db_ready, enqueued

__all__ = ["clock", "db_ready", "enqueued"]
