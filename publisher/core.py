"""Batched publishing, with no broker in sight: grouping, splitting, and outcome bookkeeping."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from publisher.errors import PublishError, describe, is_retryable
from publisher.messages import Message, Outcome, Routing
from publisher.metrics import counters, observe_request
from publisher.tracing import publish_span, with_trace_contexts
from publisher.transport import Transport

DEFAULT_BATCH_SIZE = 100
DEFAULT_MAX_WORKERS = 8

SendBatch = Callable[[Sequence[Message]], list[Outcome]]


def plan_requests(messages: Sequence[Message], batch_size: int) -> list[list[int]]:
    """Indexes of ``messages`` per broker request: grouped by routing, split at ``batch_size``.

    Groups come in order of their first message and keep their messages' input order, so
    messages of one routing leave in the order they were given.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    groups: dict[Routing, list[int]] = {}
    for index, message in enumerate(messages):
        groups.setdefault(message.routing, []).append(index)
    return [
        indexes[start : start + batch_size]
        for indexes in groups.values()
        for start in range(0, len(indexes), batch_size)
    ]


def publish_messages(
    messages: Sequence[Message],
    transport: Transport,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_workers: int = DEFAULT_MAX_WORKERS,
) -> list[Outcome]:
    """Publish ``messages`` through ``transport`` and return one outcome per message, in order.

    Messages are grouped by routing and each group is split into requests of at most
    ``batch_size``; a one-message request uses ``send``, larger ones ``send_batch``. A transport
    without ``send_batch`` gets concurrent single sends (``max_workers`` threads). Each request
    is a span (with OpenTelemetry) and its messages get its trace context in their headers. If
    any message failed, or the transport returned the wrong number of outcomes, raises
    ``PublishError`` carrying every outcome.
    """
    plan = plan_requests(messages, batch_size)
    if not messages:
        return []
    traced = list(messages)
    results: list[Outcome | None] = [None] * len(traced)
    mismatches: list[str] = []

    send_batch: SendBatch | None = getattr(transport, "send_batch", None)
    if send_batch is not None:
        for indexes in plan:
            batch = [traced[i] for i in indexes]
            outcomes, mismatch = _request(transport, send_batch, batch)
            if mismatch:
                mismatches.append(mismatch)
            for index, outcome in zip(indexes, outcomes, strict=True):
                results[index] = outcome
    else:
        workers = max(1, min(max_workers, len(traced)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fanfold-publish") as pool:
            singles = pool.map(lambda message: _request(transport, None, [message]), traced)
            for index, (outcomes, _) in enumerate(singles):
                results[index] = outcomes[0]

    final = [outcome for outcome in results if outcome is not None]
    failures = [outcome for outcome in final if not outcome.ok]
    if failures:
        raise PublishError(
            len(failures),
            len(final),
            retryable=bool(mismatches) or any(outcome.retryable for outcome in failures),
            detail="; ".join(mismatches) or None,
            outcomes=final,
        )
    return final


def _request(
    transport: Transport, send_batch: SendBatch | None, batch: list[Message]
) -> tuple[list[Outcome], str | None]:
    """One transport call: its outcomes (one per message) and a count mismatch, if any."""
    mismatch: str | None = None
    raised = False
    with publish_span(len(batch)):
        # Inside the span, so a message names the request that carried it as its parent.
        batch = with_trace_contexts(batch)
        try:
            if send_batch is None or len(batch) == 1:
                outcomes = [transport.send(batch[0])]
            else:
                outcomes = list(send_batch(batch))
        except Exception as exc:
            raised = True
            failure = Outcome.failure(describe(exc), retryable=is_retryable(exc))
            outcomes = [failure] * len(batch)
    if len(outcomes) != len(batch):
        # Outcomes cannot be matched to messages, so none of them can be trusted as sent.
        mismatch = f"transport returned {len(outcomes)} outcomes for {len(batch)} messages"
        outcomes = [Outcome.failure(mismatch, retryable=True)] * len(batch)
    failed = [outcome for outcome in outcomes if not outcome.ok]
    counters.record_request(len(batch), failures=len(failed), raised=raised)
    observe_request(len(batch), sum(1 for o in failed if o.retryable), len(failed))
    return outcomes, mismatch
