"""A run's updates go with it: purged with its rows, also when its week's partitions are
emptied (the update table is not partitioned), and archived with its other sections."""

from __future__ import annotations

from typing import Any

import update_flows  # noqa: F401  (registers the workflows)
from django.db import connection
from django.utils import timezone

from runtime.lifecycle.archive import SECTIONS
from runtime.models import Run, RunUpdate
from runtime.services import start_run
from runtime.store.lifecycle import purge


def test_updates_are_deleted_with_their_run_even_without_history(
    runs: Any,
) -> None:
    run, _ = start_run("tests.upd.plain")
    other, _ = start_run("tests.upd.plain")
    for rid in (run.id, other.id):
        RunUpdate.objects.create(run_id=rid, update_id="u", name="poke", created_at=timezone.now())
    Run.objects.filter(id__in=[run.id, other.id]).update(status="completed")
    counts = purge.delete_runs(connection.alias, [run.id], history=False)
    assert counts[RunUpdate._meta.label] == 1
    assert list(RunUpdate.objects.values_list("run_id", flat=True)) == [other.id]
    assert SECTIONS["updates"] is RunUpdate
