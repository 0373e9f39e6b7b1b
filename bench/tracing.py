"""An OpenTelemetry SDK provider for `bench ... --observe`: spans made, batched and dropped.

Imported by the benchmark's workers through FANFOLD_WORKFLOW_MODULES when `BENCH_TRACING=1` is
in their environment (and installed in the benchmark process itself by `install()`), so the
measured cost is the SDK's real one: a span per run pass, step attempt, checkpoint batch and
publish request, handed to a batch processor whose exporter discards them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

ENV = "BENCH_TRACING"
_installed = False


class DiscardingExporter(SpanExporter):
    """Counts what it is given and keeps nothing."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def install() -> None:
    """Make an SDK provider with a batch processor this process's tracer provider (once)."""
    global _installed
    if _installed:
        return
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardingExporter()))
    trace.set_tracer_provider(provider)
    _installed = True


if os.environ.get(ENV) == "1":
    install()
