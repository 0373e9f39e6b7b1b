"""What the publisher sends: a task message, where it goes, and what became of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IDEMPOTENCY_HEADER = "fanfold_idempotency_key"


@dataclass(frozen=True)
class Routing:
    """Where a message goes: every dimension that one broker request cannot span.

    Messages with equal routing may share a request; the publisher groups by this value, so it
    is hashable. ``None`` leaves the choice to the transport (for Celery: the app's router and
    default queue).
    """

    queue: str | None = None
    priority: int | None = None
    exchange: str | None = None
    routing_key: str | None = None


@dataclass(frozen=True)
class Message:
    """One task message: task name, JSON arguments, idempotency key, headers and routing.

    The idempotency key is derived by the caller (run, step, attempt) so that a republish is
    recognisably the same message; transports use it as the message id.
    """

    task: str
    idempotency_key: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, Any] = field(default_factory=dict)
    routing: Routing = field(default_factory=Routing)

    def __post_init__(self) -> None:
        if not isinstance(self.task, str) or not self.task:
            raise ValueError("a message needs a task name")
        if not isinstance(self.idempotency_key, str) or not self.idempotency_key:
            raise ValueError("a message needs an idempotency key")
        if isinstance(self.args, tuple):
            # Tuples read back from JSON as lists; store what the consumer will see.
            object.__setattr__(self, "args", list(self.args))
        if not isinstance(self.args, list):
            raise TypeError("message args must be a list")
        if not isinstance(self.kwargs, dict) or not all(isinstance(k, str) for k in self.kwargs):
            raise TypeError("message kwargs must be a dict with string keys")
        if not isinstance(self.headers, dict) or not all(isinstance(k, str) for k in self.headers):
            raise TypeError("message headers must be a dict with string keys")


@dataclass(frozen=True)
class Outcome:
    """What a transport did with one message.

    A ``message_id`` means sent; an ``error`` means not sent (``retryable`` says whether trying
    again may help); neither means accepted for later delivery, which counts as success.
    """

    message_id: str | None = None
    error: str | None = None
    retryable: bool = False

    @property
    def ok(self) -> bool:
        """True unless the message failed to publish."""
        return self.error is None

    @classmethod
    def sent(cls, message_id: str) -> Outcome:
        """The message left under ``message_id``."""
        return cls(message_id=message_id)

    @classmethod
    def deferred(cls) -> Outcome:
        """The transport accepted the message and will deliver it later."""
        return cls()

    @classmethod
    def failure(cls, error: str, *, retryable: bool) -> Outcome:
        """The message was not published."""
        return cls(error=error, retryable=retryable)
