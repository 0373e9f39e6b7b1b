"""`/metrics` for web processes: the process's metrics plus gauges read from the database.

The gauges (runs pending, running and waiting; the age of the oldest pending run; the
stranded runs of each version, runtime.observe.versions) are queried
when Prometheus scrapes, here only: workers never query for metrics. They are read from the
read replica when one serves reads, which adds its own lag (runtime.store.replica registers
both with `read_gauges_with`). Staff sessions may read
the page, and so may a request with `Authorization: Bearer <FANFOLD_METRICS_TOKEN>`.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from runtime import conf
from runtime.models import RunStatus
from runtime.models.run_queue import counts_by_status, oldest_pending_created_at
from runtime.observe.exporter import process_registry
from runtime.observe.versions import version_rows

QUEUE_STATES = (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING)


class RunQueueCollector:
    """Runs by active status and the oldest pending run's age, read at collect time."""

    def collect(self) -> Iterator[Metric]:
        counts = counts_by_status(QUEUE_STATES)
        runs = GaugeMetricFamily("fanfold_runs", "Runs not finished, by status.", labels=["status"])
        for status in QUEUE_STATES:
            runs.add_metric([status.value], counts.get(status, 0))
        yield runs
        oldest = oldest_pending_created_at()
        age = (timezone.now() - oldest).total_seconds() if oldest is not None else 0.0
        yield GaugeMetricFamily(
            "fanfold_oldest_pending_run_age_seconds",
            "Seconds since the oldest pending run was created (0 when none is pending).",
            value=max(age, 0.0),
        )
        stranded = GaugeMetricFamily(
            "fanfold_runs_stranded",
            "Runs in flight on a version no live worker has served lately, by version.",
            labels=["version"],
        )
        for row in version_rows():
            if row["stranded"]:
                stranded.add_metric([row["version"]], row["stranded"])
        yield stranded


_gauge_reads: Callable[[], AbstractContextManager[object]] = nullcontext
_more_gauges: list[Any] = []


def read_gauges_with(reads: Callable[[], AbstractContextManager[object]], more: Any) -> None:
    """Read the database gauges inside `reads()` and add `more`'s metrics to them."""
    global _gauge_reads
    _gauge_reads = reads
    _more_gauges.append(more)


class _Scrape:
    """The process's registry followed by the database gauges, as generate_latest reads it."""

    def collect(self) -> Iterator[Metric]:
        yield from process_registry().collect()
        with _gauge_reads():
            gauges = [*RunQueueCollector().collect()]
        yield from gauges
        for part in _more_gauges:
            yield from part.collect()


def allowed(request: HttpRequest) -> bool:
    """A staff session, or the configured bearer token."""
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    token = conf.get().METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    # compare_digest refuses str with non-ASCII characters (TypeError): compare bytes.
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode("utf-8"))


def metrics_view(request: HttpRequest) -> HttpResponse:
    """The Prometheus text exposition of this process and the database gauges."""
    if not allowed(request):
        response = HttpResponse("metrics need a staff session or the metrics token\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="fanfold-metrics"'
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    body = generate_latest(_Scrape())
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
