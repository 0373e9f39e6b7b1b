"""Callback deadlines and what `Callback.wait()` does, given the recorded callback step.

Pure: the adapter in runtime.durable.callbacks reads and writes the history; this module decides.
A callback has up to two deadlines: `timeout` after its creation (fixed) and
`heartbeat_timeout` after its creation or its latest heartbeat (moved by each heartbeat).
The step's `wake_at` holds the nearer of the two.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from runtime.core import history
from runtime.core.states import StepStatus

TIMEOUT = "timeout"
HEARTBEAT_TIMEOUT = "heartbeat_timeout"


_TOKEN_CONTEXT = b"fanfold-callback-token:"


RUN_ID_LENGTH = 22  # a run id's 16 bytes in unpadded URL-safe base64
MAC_LENGTH = 43  # 32 bytes in unpadded URL-safe base64


def derive_token(secret: bytes, run_id: uuid.UUID, step_id: uuid.UUID) -> str:
    """The callback token of the callback step `step_id` of run `run_id`: unguessable without
    `secret`, URL-safe, 256 bits of MAC, and the same on every replay.

    Derived rather than random so that only its digest need be stored (`token_digest`): a
    replay recomputes `.token` from the step's id. A fork's copied callback is a new step, so
    it gets a new token too. The token starts with its run's id (not secret: the MAC is what
    cannot be guessed), so that its lookup names the run and reads one week's partition of a
    partitioned history rather than every week's (`token_run`).
    """
    return _unpadded(run_id.bytes) + _mac(secret, step_id)


def token_run(token: str) -> uuid.UUID | None:
    """The run id a token starts with; None for a token without one (made before tokens
    named their run: the MAC alone) or of any other shape."""
    if len(token) != RUN_ID_LENGTH + MAC_LENGTH:
        return None
    try:
        raw = base64.urlsafe_b64decode(token[:RUN_ID_LENGTH] + "==")
    except (ValueError, binascii.Error):
        return None
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


def token_digest(token: str) -> str:
    """What is stored of a callback token: its SHA-256, in hex (64 characters)."""
    return hashlib.sha256(token.encode()).hexdigest()


def recover_token(
    secrets: Sequence[bytes], run_id: uuid.UUID, step_id: uuid.UUID, digest: str
) -> str | None:
    """The token whose digest is `digest`, derived with one of `secrets` (the current key,
    then the fallbacks), in the current form or the earlier one (the MAC alone, still held by
    users of callbacks created before); None if none matches (a token made before tokens
    were derived, or with a key since dropped)."""
    for secret in secrets:
        for token in (derive_token(secret, run_id, step_id), _mac(secret, step_id)):
            if hmac.compare_digest(token_digest(token), digest):
                return token
    return None


def _mac(secret: bytes, step_id: uuid.UUID) -> str:
    return _unpadded(hmac.new(secret, _TOKEN_CONTEXT + step_id.bytes, hashlib.sha256).digest())


def _unpadded(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def as_seconds(value: float | timedelta | None, what: str) -> float | None:
    """`value` as a non-negative number of seconds, or None; ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{what} must be a non-negative number of seconds or a timedelta")
    return float(value)


@dataclass(frozen=True, slots=True)
class CallbackTerms:
    """The deadlines a callback was created with, in seconds (None: no such deadline)."""

    timeout: float | None = None
    heartbeat_timeout: float | None = None

    @classmethod
    def of(
        cls, timeout: float | timedelta | None, heartbeat_timeout: float | timedelta | None
    ) -> CallbackTerms:
        return cls(
            as_seconds(timeout, "timeout"), as_seconds(heartbeat_timeout, "heartbeat_timeout")
        )

    @classmethod
    def from_input(cls, recorded_input: Any) -> CallbackTerms:
        """The terms as recorded in the callback step's input."""
        data = recorded_input if isinstance(recorded_input, dict) else {}
        return cls(data.get(TIMEOUT), data.get(HEARTBEAT_TIMEOUT))

    def as_input(self) -> dict[str, float | None]:
        return {TIMEOUT: self.timeout, HEARTBEAT_TIMEOUT: self.heartbeat_timeout}

    def expires_at(self, created: datetime) -> datetime | None:
        """The fixed deadline set by `timeout`."""
        return None if self.timeout is None else created + timedelta(seconds=self.timeout)

    def first_deadline(self, created: datetime) -> datetime | None:
        """The deadline when the callback is created: the nearer of the two."""
        return self.deadline_after_heartbeat(created, created)

    def deadline_after_heartbeat(self, created: datetime, beat: datetime) -> datetime | None:
        """The deadline once a heartbeat arrived at `beat`."""
        candidates = [self.expires_at(created)]
        if self.heartbeat_timeout is not None:
            candidates.append(beat + timedelta(seconds=self.heartbeat_timeout))
        present = [c for c in candidates if c is not None]
        return min(present) if present else None

    def reason(self, created: datetime, now: datetime) -> str:
        """Which deadline a time-out at `now` ran into."""
        expires = self.expires_at(created)
        return TIMEOUT if expires is not None and now >= expires else HEARTBEAT_TIMEOUT


@dataclass(frozen=True, slots=True)
class AwaitPost:
    """Nothing posted yet: park the run until `deadline` (None: until the post wakes it)."""

    deadline: datetime | None


@dataclass(frozen=True, slots=True)
class TimeOut:
    """The deadline passed with nothing posted: record the time-out and raise it."""

    reason: str
    deadline: datetime


@dataclass(frozen=True, slots=True)
class RaiseTimedOut:
    """The time-out was recorded before: raise it again."""

    message: str


WaitAction = history.ReturnRecorded | history.RaiseRecorded | RaiseTimedOut | AwaitPost | TimeOut


def next_wait_action(
    recorded: history.RecordedStep, terms: CallbackTerms, now: datetime
) -> WaitAction:
    """What `Callback.wait()` does, given the callback's recorded step and the time."""
    if recorded.status == StepStatus.COMPLETED:
        return history.ReturnRecorded(recorded.result)
    if recorded.status in (StepStatus.FAILED, StepStatus.CANCELLED):
        error = recorded.error or {}
        if error.get("timed_out"):
            return RaiseTimedOut(str(error.get("message", "")))
        return history.RaiseRecorded(recorded.error)
    deadline = recorded.wake_at
    if deadline is None or deadline > now:
        return AwaitPost(deadline)
    created = recorded.started_at or deadline
    return TimeOut(terms.reason(created, now), deadline)


def timed_out_error(name: str, reason: str, deadline: datetime) -> dict[str, Any]:
    """The step error recorded for a callback that timed out."""
    what = "no heartbeat arrived in time" if reason == HEARTBEAT_TIMEOUT else "nothing was posted"
    return {
        "type": "CallbackTimedOut",
        "message": f"callback {name!r} timed out at {deadline.isoformat()}: {what}",
        "timed_out": reason,
    }
