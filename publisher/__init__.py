"""Batched, idempotent dispatch of task messages over the Celery broker.

``publish_messages`` is the pure core; ``CeleryTransport`` publishes real Celery task messages
and ``FakeTransport`` (in ``publisher.fake``) stands in for it in tests.
"""

from __future__ import annotations

from publisher.celery_transport import CeleryTransport
from publisher.core import DEFAULT_BATCH_SIZE, plan_requests, publish_messages
from publisher.errors import PublisherError, PublishError, is_retryable
from publisher.messages import IDEMPOTENCY_HEADER, Message, Outcome, Routing
from publisher.metrics import CounterSnapshot, counters
from publisher.tracing import current_trace_headers, with_trace_context
from publisher.transport import BatchTransport, Transport

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "IDEMPOTENCY_HEADER",
    "BatchTransport",
    "CeleryTransport",
    "CounterSnapshot",
    "Message",
    "Outcome",
    "PublishError",
    "PublisherError",
    "Routing",
    "Transport",
    "counters",
    "current_trace_headers",
    "is_retryable",
    "plan_requests",
    "publish_messages",
    "with_trace_context",
]
