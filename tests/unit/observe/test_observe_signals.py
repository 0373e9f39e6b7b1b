"""Metrics and spans of step attempts, run passes, checkpoint batches and publish requests,
read from prometheus_client's registry and the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from prometheus_client import REGISTRY

from publisher import tracing as publish_tracing
from publisher.core import publish_messages
from publisher.fake import FakeTransport
from publisher.messages import Message
from runtime.checkpoint import Checkpoint, MemorySink
from runtime.checkpoint.writer import CheckpointWriter
from runtime.observe import metrics
from runtime.observe.attempts import RunPass, StepAttempt
from runtime.observe.switches import configure

SAMPLE_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = publish_tracing.use_tracer(provider.get_tracer("test"))
    yield exporter
    publish_tracing.use_tracer(previous)
    provider.shutdown()


@pytest.fixture(autouse=True)
def _switched_on() -> Iterator[None]:
    configure(metrics_enabled=True, tracing_enabled=True)
    yield
    configure(metrics_enabled=True, tracing_enabled=True)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_observe_step_attempt_counts_its_outcome_and_makes_a_child_span_of_the_pass(
    spans: InMemorySpanExporter,
) -> None:
    run_id = uuid.uuid4()
    step = f"unit.step.{run_id.hex[:8]}"
    with RunPass(run_id, "unit.flow") as run_pass:
        for attempt, outcome in ((1, "retrying"), (2, "completed")):
            with StepAttempt(run_id, step, 3, attempt) as observed:
                observed.outcome = outcome
        run_pass.outcome = "completed"

    count = "fanfold_step_duration_seconds_count"
    assert sample(count, step=step, status="retrying") == 1
    assert sample(count, step=step, status="completed") == 1
    assert sample("fanfold_step_retries_total", step=step) == 1
    first, second, run_span = spans.get_finished_spans()
    assert run_span.name == "fanfold.run" and run_span.attributes["fanfold.outcome"] == "completed"
    assert dict(second.attributes or {}) == {
        "fanfold.run_id": str(run_id),
        "fanfold.workflow": "unit.flow",
        "fanfold.step.name": step,
        "fanfold.step.position": 3,
        "fanfold.step.attempt": 2,
        "fanfold.outcome": "completed",
    }
    assert first.parent is not None and first.parent.span_id == run_span.context.span_id


def test_observe_an_unclassified_exception_counts_as_failed(spans: InMemorySpanExporter) -> None:
    step = f"unit.boom.{uuid.uuid4().hex[:8]}"
    with pytest.raises(ValueError), StepAttempt(uuid.uuid4(), step, 1, 1):
        raise ValueError("boom")
    assert sample("fanfold_step_duration_seconds_count", step=step, status="failed") == 1
    [span] = spans.get_finished_spans()
    assert span.attributes["fanfold.outcome"] == "failed"


def test_observe_switched_off_records_nothing(spans: InMemorySpanExporter) -> None:
    configure(metrics_enabled=False, tracing_enabled=False)
    step = f"unit.quiet.{uuid.uuid4().hex[:8]}"
    with StepAttempt(uuid.uuid4(), step, 1, 1) as observed:
        observed.outcome = "completed"
    assert sample("fanfold_step_duration_seconds_count", step=step, status="completed") == 0
    assert spans.get_finished_spans() == ()
    assert metrics.enabled() is False


def test_observe_checkpoint_batches_are_counted_and_their_wait_is_on_the_step_span(
    spans: InMemorySpanExporter,
) -> None:
    before = sample("fanfold_checkpoint_batch_size_sum")
    commits = sample("fanfold_checkpoint_commit_seconds_count")
    writer = CheckpointWriter(MemorySink())
    try:
        writer.write(Checkpoint(session="outside", payload=object(), size=1, sync=True))
        with StepAttempt(uuid.uuid4(), "unit.commit", 1, 1) as observed:
            writer.write(Checkpoint(session="s", payload=object(), size=1, sync=True))
            writer.write(Checkpoint(session="s", payload=object(), size=1, sync=True))
            observed.outcome = "completed"
    finally:
        writer.close()
    assert sample("fanfold_checkpoint_batch_size_sum") == before + 3
    assert sample("fanfold_checkpoint_commit_seconds_count") == commits + 3
    # Commits are no spans of their own: the step's span says how long it waited for them.
    [span] = spans.get_finished_spans()
    assert span.name == "fanfold.step"
    assert span.attributes["fanfold.checkpoint.seconds"] > 0


def test_observe_spans_a_step_body_makes_are_children_of_its_step_span(
    spans: InMemorySpanExporter,
) -> None:
    tracer = publish_tracing.tracer()
    with StepAttempt(uuid.uuid4(), "unit.body", 1, 1) as observed:
        tracer.start_span("user.call").end()
        observed.outcome = "completed"
    user, step = spans.get_finished_spans()
    assert user.parent is not None and user.parent.span_id == step.context.span_id


def test_observe_an_unsampled_step_span_records_nothing_but_still_counts() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = publish_tracing.use_tracer(provider.get_tracer("test"))
    step = f"unit.unsampled.{uuid.uuid4().hex[:8]}"
    try:
        with StepAttempt(uuid.uuid4(), step, 1, 1, SAMPLE_PARENT) as observed:
            observed.outcome = "completed"
    finally:
        publish_tracing.use_tracer(previous)
        provider.shutdown()
    assert exporter.get_finished_spans() == ()
    assert sample("fanfold_step_duration_seconds_count", step=step, status="completed") == 1


def test_observe_a_branch_span_links_to_the_span_its_traceparent_names(
    spans: InMemorySpanExporter,
) -> None:
    with StepAttempt(uuid.uuid4(), "unit.branch", 2, 1, SAMPLE_PARENT) as observed:
        observed.outcome = "completed"
    [span] = spans.get_finished_spans()
    [link] = span.links
    assert format(link.context.trace_id, "032x") == SAMPLE_PARENT.split("-")[1]
    assert format(link.context.span_id, "016x") == SAMPLE_PARENT.split("-")[2]
    assert "fanfold.workflow" not in (span.attributes or {})


def test_observe_publish_requests_are_spans_their_messages_name(
    spans: InMemorySpanExporter,
) -> None:
    fake = FakeTransport()
    failed = sample("fanfold_publish_failed_messages_total", retryable="true")
    batches = sample("fanfold_publish_batch_size_count")
    publish_messages([Message("t", f"k{i}") for i in range(5)], fake, batch_size=3)

    publishes = [s for s in spans.get_finished_spans() if s.name == "fanfold.publish"]
    assert [s.attributes["messaging.batch.message_count"] for s in publishes] == [3, 2]
    sent = [m for request in fake.requests for m in request.messages]
    ids = [format(s.context.span_id, "016x") for s in publishes]
    assert [m.headers["traceparent"].split("-")[2] for m in sent] == [ids[0]] * 3 + [ids[1]] * 2
    assert sample("fanfold_publish_batch_size_count") == batches + 2
    assert sample("fanfold_publish_failed_messages_total", retryable="true") == failed
