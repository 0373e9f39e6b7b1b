"""Workflows for the observability acceptance tests, and a span exporter for worker processes.

Imported by the test process and, through FANFOLD_WORKFLOW_MODULES, by the workers. With
`TESTS_SPAN_DIR` in a worker's environment the import installs an OpenTelemetry SDK provider
whose spans are written, as they end, to `spans-<pid>.jsonl` in that directory: one file per
process, read by the test after the workers stopped.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from runtime import RetryableError, RetryPolicy, current_step, step, workflow

MODULE = __name__
SPAN_DIR = "TESTS_SPAN_DIR"


@step(name="tests.observe.nap")
def nap(i: int, seconds: float = 0.0) -> int:
    if seconds:
        time.sleep(seconds)
    return i


@step(
    name="tests.observe.shaky",
    retry=RetryPolicy(max_attempts=3, initial_delay=0.05, backoff=1.0, jitter=False),
)
def shaky() -> str:
    """Fails its first attempt, then succeeds."""
    if current_step().attempt == 1:
        raise RetryableError("first attempt fails")
    return "ok"


@workflow(name="tests.observe.steps")
def steps(ctx: Any, n: int) -> int:
    total = sum(ctx.step(nap, i) for i in range(n))
    ctx.step(shaky)
    return total


@workflow(name="tests.observe.fan")
def fan(ctx: Any, n: int, seconds: float = 0.0) -> int:
    first = ctx.step(nap, -1)
    return first + sum(ctx.all([nap.s(i, seconds) for i in range(n)]))


class FileExporter(SpanExporter):
    """Appends each ended span to this process's file (the pid is read per export: forks)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        path = self.directory / f"spans-{os.getpid()}.jsonl"
        with path.open("a") as out:
            for span in spans:
                out.write(json.dumps(describe(span)) + "\n")
        return SpanExportResult.SUCCESS


def _install_file_exporter(directory: Path) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(directory)))
    trace.set_tracer_provider(provider)


def describe(span: Any) -> dict[str, Any]:
    """A span as the test reads it: ids in hex, attributes, links, parent and process."""
    context = span.get_span_context()
    return {
        "name": span.name,
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent": format(span.parent.span_id, "016x") if span.parent else None,
        "attributes": dict(span.attributes or {}),
        "links": [format(link.context.span_id, "016x") for link in span.links],
        "pid": os.getpid(),
    }


if os.environ.get(SPAN_DIR):
    _install_file_exporter(Path(os.environ[SPAN_DIR]))
