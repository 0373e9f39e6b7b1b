"""Which workers served which deployment version, and when last (runtime.versions).

Each worker process writes its row per version it serves every few seconds; `fanfold
versions` lists them, and a version with runs in flight but no row seen lately has stranded
runs. Rows of workers gone for long are deleted by the same pass. The reads `fanfold versions`
and the metrics make are here rather than in runtime.store: the store itself reports metrics.
"""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Count, Max, Min
from django.db.models.functions import Coalesce

from runtime.models.runs import Run
from runtime.models.states import ACTIVE_RUN_STATES


class ServedVersion(models.Model):
    version = models.CharField(max_length=64)
    # hostname:pid of the worker process (its Celery node name for a Celery worker).
    worker = models.CharField(max_length=255)
    last_seen = models.DateTimeField()
    # When this worker first served this version (null: a row from before this column). A
    # version arrived when its first row did: the latest to arrive takes schedule ticks.
    first_seen = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "worker"], name="served_version_unique")
        ]
        indexes = [models.Index(fields=["version", "-last_seen"], name="served_version_seen_idx")]
        # Held by whoever may move runs from one version to another (besides staff).
        permissions = [("upgrade_version", "Can upgrade in-flight runs to another version")]

    def __str__(self) -> str:
        return f"{self.version} on {self.worker}"


def active_counts_by_version() -> dict[str, dict[str, int]]:
    """{version: {status: runs}} of the runs in flight (pending, running, waiting)."""
    rows = (
        Run.objects.filter(status__in=ACTIVE_RUN_STATES)
        .order_by()
        .values_list("app_version", "status")
        .annotate(n=Count("pk"))
    )
    counts: dict[str, dict[str, int]] = {}
    for version, status, n in rows:
        counts.setdefault(version, {})[status] = n
    return counts


def served_by(since: datetime) -> dict[str, list[tuple[str, datetime]]]:
    """{version: [(worker, last seen), ...]} of the workers seen since `since`, newest first."""
    found: dict[str, list[tuple[str, datetime]]] = {}
    rows = ServedVersion.objects.filter(last_seen__gte=since).order_by("version", "-last_seen")
    for version, worker, seen in rows.values_list("version", "worker", "last_seen"):
        found.setdefault(version, []).append((worker, seen))
    return found


def last_served() -> dict[str, datetime]:
    """{version: when a worker last served it} over every row kept."""
    rows = ServedVersion.objects.order_by().values_list("version").annotate(seen=Max("last_seen"))
    return dict(rows.values_list("version", "seen"))


def latest_arrivals(since: datetime) -> set[str]:
    """Of the versions served since `since`, those that arrived last: whose first row (over
    every row kept, live or not) is the latest; empty if no version was served since."""
    live = ServedVersion.objects.filter(last_seen__gte=since).values_list("version")
    firsts = dict(
        ServedVersion.objects.filter(version__in=live)
        .order_by()
        .values_list("version")
        .annotate(first=Min(Coalesce("first_seen", "last_seen")))
        .values_list("version", "first")
    )
    if not firsts:
        return set()
    latest = max(firsts.values())
    return {version for version, first in firsts.items() if first == latest}
