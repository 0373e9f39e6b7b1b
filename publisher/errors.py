"""Publisher errors and the rule that decides whether a failed publish is worth retrying."""

from __future__ import annotations

from collections.abc import Sequence

import kombu.exceptions
from kombu.exceptions import OperationalError, SerializationError

from publisher.messages import Outcome

# celery-types' kombu stubs predate kombu 5.7, which added BatchPublishError.
_BatchPublishError: type[Exception] = kombu.exceptions.BatchPublishError  # type: ignore[attr-defined]

# Connection trouble, timeouts, and a Redis pipeline whose delivery is uncertain: trying again
# may succeed, and the idempotency key makes a duplicate recognisable.
_TRANSIENT: tuple[type[BaseException], ...] = (OSError, OperationalError, _BatchPublishError)
# The message itself is wrong (not JSON, bad argument shapes, unknown queue): it will fail the
# same way every time. Everything else is assumed transient, since a dispatch dropped for good
# is worse than one retried a bounded number of times.
_PERMANENT: tuple[type[BaseException], ...] = (
    TypeError,
    ValueError,
    LookupError,
    SerializationError,
)


def is_retryable(exc: BaseException) -> bool:
    """Whether a publish that raised ``exc`` may succeed if tried again.

    Connection errors and timeouts (``OSError``, kombu ``OperationalError``, kombu
    ``BatchPublishError``) are retryable; ``TypeError``, ``ValueError``, ``LookupError`` and
    kombu serialization errors are permanent; anything else is retryable.
    """
    if isinstance(exc, _TRANSIENT):
        return True
    return not isinstance(exc, _PERMANENT)


def describe(exc: BaseException) -> str:
    """The error text recorded in an outcome: exception type and message."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class PublisherError(Exception):
    """Base class of the errors the publisher raises on purpose."""

    code = "publisher_error"


class PublishError(PublisherError):
    """Some messages of a publish call failed; ``outcomes`` holds one outcome per message.

    ``retryable`` is true if any failure was retryable. ``args`` holds only JSON values so the
    error also survives Celery's JSON exception transport; pickling keeps the outcomes too.
    """

    code = "publish_failed"

    def __init__(
        self,
        failed: int,
        total: int,
        retryable: bool,
        detail: str | None = None,
        outcomes: Sequence[Outcome] = (),
    ) -> None:
        super().__init__(failed, total, retryable, detail)
        self.failed = failed
        self.total = total
        self.retryable = retryable
        self.detail = detail
        self.outcomes: tuple[Outcome, ...] = tuple(outcomes)

    def __str__(self) -> str:
        message = f"{self.failed} of {self.total} messages failed to publish"
        return f"{message}: {self.detail}" if self.detail else message
