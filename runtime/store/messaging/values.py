"""Run values: the latest value of each key a run set, kept by the position that set it."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction

from runtime.core.clock import current_time
from runtime.models import Run, RunValue
from runtime.store.history.payload_forms import StoredForms


def upsert_value(run_id: uuid.UUID, key: str, value: Any, position: int) -> None:
    """Record `value` (in its stored form) as the run's value of `key` unless a later position
    set one."""
    now = current_time()
    value = StoredForms().form(value, run_id)  # encrypted or offloaded like every payload
    newer = RunValue.objects.filter(run_id=run_id, key=key, position__lte=position)
    if not newer.update(value=value, position=position, updated_at=now):
        try:
            with transaction.atomic():
                RunValue.objects.create(
                    run_id=run_id, key=key, value=value, position=position, updated_at=now
                )
        except IntegrityError:  # set meanwhile (a replay racing a zombie): keep the later one
            newer.update(value=value, position=position, updated_at=now)


def run_exists(run_id: uuid.UUID) -> bool:
    """Whether there is such a run."""
    return Run.objects.filter(id=run_id).exists()


def latest_value(run_id: uuid.UUID, key: str, missing: Any = None) -> Any:
    """The run's committed value of `key`, or `missing` when it has set none."""
    values = RunValue.objects.filter(run_id=run_id, key=key).values_list("value", flat=True)
    found = list(values[:1])
    return found[0] if found else missing
