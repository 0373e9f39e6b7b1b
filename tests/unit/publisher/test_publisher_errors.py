"""PublishError's contract and the retryable rule."""

from __future__ import annotations

import pickle

import pytest
from kombu.exceptions import EncodeError, OperationalError

from publisher.errors import PublisherError, PublishError, is_retryable
from publisher.messages import Outcome


def test_publish_error_survives_pickling() -> None:
    outcomes = (Outcome.sent("a"), Outcome.failure("ConnectionError: x", retryable=True))
    error = PublishError(1, 2, retryable=True, detail="why", outcomes=outcomes)

    copy = pickle.loads(pickle.dumps(error))

    assert isinstance(copy, PublishError)
    assert (copy.failed, copy.total, copy.retryable, copy.detail) == (1, 2, True, "why")
    assert copy.outcomes == outcomes
    assert copy.code == "publish_failed"
    assert str(copy) == "1 of 2 messages failed to publish: why"


def test_publish_error_rebuilds_from_its_json_args() -> None:
    # Celery's JSON result backend rebuilds an exception as `cls(*args)`.
    error = PublishError(3, 140, retryable=False)

    rebuilt = PublishError(*error.args)

    assert str(rebuilt) == "3 of 140 messages failed to publish"
    assert rebuilt.retryable is False


def test_publish_error_is_a_publisher_error() -> None:
    assert issubclass(PublishError, PublisherError)
    assert PublisherError.code == "publisher_error"


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (ConnectionError("refused"), True),
        (TimeoutError("timed out"), True),
        (OSError("broken pipe"), True),
        (OperationalError("lost"), True),
        (RuntimeError("unknown"), True),
        (TypeError("bad"), False),
        (ValueError("bad"), False),
        (KeyError("queue"), False),
        (EncodeError("not JSON"), False),
    ],
)
def test_is_retryable_follows_the_rule(error: Exception, retryable: bool) -> None:
    assert is_retryable(error) is retryable


def test_is_retryable_treats_an_uncertain_redis_batch_as_retryable() -> None:
    from kombu.exceptions import BatchPublishError  # type: ignore[attr-defined]

    assert is_retryable(BatchPublishError("delivery is uncertain")) is True
