"""An OpenTelemetry SDK provider for `bench ... --observe`: spans made, batched and dropped.

Imported by the benchmark's workers through FANFOLD_WORKFLOW_MODULES when `BENCH_TRACING=1` is
in their environment (and installed in the benchmark process itself by `install()`), so the
measured cost is the SDK's real one: a span per run pass, step attempt and publish request,
handed to a batch processor whose exporter discards them. The sampler keeps every span, or
with `BENCH_TRACE_RATIO=R` (`bench ... --observe --trace-ratio R`) the traces of a fraction R
of the run passes (`ParentBasedTraceIdRatio`, as the user guide suggests for short steps).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBasedTraceIdRatio

ENV = "BENCH_TRACING"
RATIO_ENV = "BENCH_TRACE_RATIO"
_installed = False


class DiscardingExporter(SpanExporter):
    """Counts what it is given and keeps nothing."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def sample_ratio() -> float:
    """The fraction of run passes whose spans are kept (BENCH_TRACE_RATIO, default all)."""
    return float(os.environ.get(RATIO_ENV) or 1.0)


def make_provider(ratio: float) -> TracerProvider:
    """An SDK provider keeping every span (`ratio` 1) or the traces of a fraction `ratio`."""
    # No sampler given: the SDK's default, which keeps every span.
    provider = TracerProvider(sampler=ParentBasedTraceIdRatio(ratio) if ratio < 1 else None)
    provider.add_span_processor(BatchSpanProcessor(DiscardingExporter()))
    return provider


def install() -> None:
    """Make an SDK provider with a batch processor this process's tracer provider (once)."""
    global _installed
    if _installed:
        return
    provider = make_provider(sample_ratio())
    trace.set_tracer_provider(provider)
    _installed = True


if os.environ.get(ENV) == "1":
    install()
