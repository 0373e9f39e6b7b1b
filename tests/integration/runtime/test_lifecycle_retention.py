"""Retention, purge, archive and restore on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import lifecycle_flows  # noqa: F401  (registers the workflows)
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import models
from django.utils import timezone

from runtime.executor import Execution, ExecutionOutcome
from runtime.lifecycle.archive import SECTIONS, restore
from runtime.lifecycle.retention import expired, older_than, purge
from runtime.messaging.values import store_value
from runtime.models import Run
from runtime.models.messaging import Message
from runtime.services import start_run
from runtime.store.history.payload_forms import StoredForms


@pytest.fixture
def archive_folder(settings: Any, tmp_path: Path) -> Path:
    folder = tmp_path / "archive"
    settings.STORAGES = {
        **settings.STORAGES,
        "fanfold_archive": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": folder},
        },
    }
    return folder


def snapshot(run_id: uuid.UUID) -> dict[str, Any]:
    """Every row of a run, every column, as the ORM reads it."""

    def rows(model: type[models.Model]) -> list[dict[str, Any]]:
        found = model._default_manager.filter(run_id=run_id).order_by("pk")
        return [
            {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields}
            for obj in found
        ]

    run = Run.objects.get(id=run_id)
    record = {f.attname: getattr(run, f.attname) for f in Run._meta.concrete_fields}
    return {"run": record, **{name: rows(model) for name, model in SECTIONS.items()}}


def finished_run(run_now: Callable[..., Execution], workflow: str, *args: Any) -> uuid.UUID:
    run, _ = start_run(workflow, list(args))
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    return run.id


def age(run_id: uuid.UUID, days: float) -> None:
    Run.objects.filter(id=run_id).update(finished_at=timezone.now() - timedelta(days=days))


def test_lifecycle_purge_archive_and_restore_round_trip_a_run(
    run_now: Callable[..., Execution], archive_folder: Path
) -> None:
    run_id = finished_run(run_now, "tests.lifecycle.tell", "round")
    kept = finished_run(run_now, "tests.lifecycle.tell", "kept")
    age(run_id, 40)
    store_value(run_id, "progress", {"done": 3, "of": 3}, position=99)
    Message.objects.create(
        run_id=run_id, topic="late", value=StoredForms().form({"by": "ana"}, run_id),
        created_at=timezone.now(),
    )  # fmt: skip
    before = snapshot(run_id)
    assert before["steps"] and before["events"] and before["stream_chunks"]
    assert before["messages"] and before["values"]

    report = purge(older_than(timedelta(days=30)), archive=True)

    assert (report.runs, report.archived) == (1, 1)
    assert not Run.objects.filter(id=run_id).exists() and Run.objects.filter(id=kept).exists()
    assert all(
        not model._default_manager.filter(run_id=run_id).exists() for model in SECTIONS.values()
    )
    assert (archive_folder / "runs" / f"{run_id}.json").exists()

    restore(run_id)

    assert snapshot(run_id) == before


def test_lifecycle_restore_refuses_a_run_that_exists(
    run_now: Callable[..., Execution], archive_folder: Path
) -> None:
    run_id = finished_run(run_now, "tests.lifecycle.tell", "twice")
    age(run_id, 40)
    call_command("fanfold", "purge", "--older-than", "30d", "--archive")
    call_command("fanfold", "restore", str(run_id))

    with pytest.raises(CommandError, match="run_exists"):
        call_command("fanfold", "restore", str(run_id))
    with pytest.raises(CommandError, match="archive_not_found"):
        call_command("fanfold", "restore", str(uuid.uuid4()))


def test_lifecycle_purge_dry_run_deletes_nothing(run_now: Callable[..., Execution]) -> None:
    run_id = finished_run(run_now, "tests.lifecycle.tell", "dry")
    age(run_id, 40)

    call_command("fanfold", "purge", "--older-than", "30d", "--dry-run")

    assert Run.objects.filter(id=run_id).exists()


def test_lifecycle_retention_follows_each_workflows_own(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None]
) -> None:
    fanfold_settings(RETENTION="30d")
    day = finished_run(run_now, "tests.lifecycle.kept_a_day")
    year = finished_run(run_now, "tests.lifecycle.kept_a_year")
    default = finished_run(run_now, "tests.lifecycle.tell", "d")
    young = finished_run(run_now, "tests.lifecycle.kept_a_day")
    unfinished, _ = start_run("tests.lifecycle.tell", ["u"])
    for run_id in (day, year, default):
        age(run_id, 40)
    Run.objects.filter(id=unfinished.id).update(created_at=timezone.now() - timedelta(days=90))

    rule = expired(timezone.now())
    assert rule is not None
    purge(rule)

    remaining = set(Run.objects.values_list("id", flat=True))
    assert remaining == {year, young, unfinished.id}


def test_lifecycle_retention_none_keeps_everything(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None]
) -> None:
    fanfold_settings(RETENTION=None)
    run_id = finished_run(run_now, "tests.lifecycle.tell", "forever")
    age(run_id, 4000)

    rule = expired(timezone.now())

    assert rule is not None  # the workflows with a retention of their own
    purge(rule)
    assert Run.objects.filter(id=run_id).exists()
