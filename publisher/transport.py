"""The dispatch port: what the publisher needs from a broker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from publisher.messages import Message, Outcome


class Transport(Protocol):
    """Sends one message per call.

    ``send`` returns the message's outcome; it raises only when the request as a whole failed.
    """

    def send(self, message: Message) -> Outcome:
        """Publish one message."""
        ...


class BatchTransport(Transport, Protocol):
    """A transport that can also send many messages of one routing in one broker request.

    ``send_batch`` returns one outcome per message, in input order, and raises only when the
    request as a whole failed.
    """

    def send_batch(self, messages: Sequence[Message]) -> list[Outcome]:
        """Publish ``messages`` (all of one routing) in one request."""
        ...
