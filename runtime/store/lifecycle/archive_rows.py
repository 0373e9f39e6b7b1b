"""The rows an archive is made from and restored into (runtime.lifecycle.archive decides the
document's shape)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence

from django.db import models, transaction

from runtime.core.lifecycle_errors import RunExists
from runtime.models import Run


def section_rows(
    model: type[models.Model], run_ids: Sequence[uuid.UUID], order: str
) -> Iterator[models.Model]:
    """The rows of one per-run table for these runs, by run and then `order`."""
    found = model._default_manager.filter(run_id__in=list(run_ids))
    return found.order_by("run_id", order).iterator(chunk_size=2000)


def runs_by_id(run_ids: Sequence[uuid.UUID]) -> Iterator[Run]:
    """These runs' rows, by id."""
    return Run.objects.filter(id__in=list(run_ids)).order_by("id").iterator()


def insert_restored(
    run: Run, parts: Mapping[str, tuple[type[models.Model], list[models.Model]]]
) -> Run:
    """Insert a run and its records in one transaction; RunExists (nothing written) when the
    run is in the database."""
    with transaction.atomic():
        if Run.objects.filter(id=run.id).exists():
            raise RunExists(f"run {run.id} exists; delete it first to restore its archive")
        Run.objects.bulk_create([run])
        for model, rows in parts.values():
            model._default_manager.bulk_create(rows, batch_size=1000)
    return Run.objects.get(id=run.id)
