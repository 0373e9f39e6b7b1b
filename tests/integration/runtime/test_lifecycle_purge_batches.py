"""`fanfold purge --archive` at batch scale: 1,200 runs in three transactions, one restored."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from io import StringIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lifecycle_flows  # noqa: F401  (registers the workflows)
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from test_lifecycle_retention import age, finished_run, snapshot

from runtime.executor import Execution
from runtime.lifecycle import retention
from runtime.lifecycle.archive import SECTIONS, read_archive
from runtime.models import Event, EventType, Run, RunStatus, Step, StepStatus

LOADED = 1_199  # finished runs written directly, besides one run of a real workflow


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


def _load_finished_runs(count: int, days_ago: float) -> list[uuid.UUID]:
    """`count` completed runs with one step and two events each, finished `days_ago`."""
    at = timezone.now() - timedelta(days=days_ago)
    runs = [
        Run(
            workflow="tests.lifecycle.tell",
            input={"args": [f"word-{i}"], "kwargs": {}},
            status=RunStatus.COMPLETED,
            result={"n": i},
            created_at=at,
            started_at=at,
            finished_at=at,
            updated_at=at,
            last_seq=2,
        )
        for i in range(count)
    ]
    Run.objects.bulk_create(runs)
    steps = [
        Step(
            id=uuid.uuid5(run.id, "1"),
            run=run,
            position=1,
            name="tests.lifecycle.echo",
            status=StepStatus.COMPLETED,
            attempt=1,
            input={"args": [i]},
            result=i,
            created_at=at,
            finished_at=at,
        )
        for i, run in enumerate(runs)
    ]
    Step.objects.bulk_create(steps)
    Event.objects.bulk_create(
        Event(run=run, seq=seq, type=kind, payload={"seq": seq}, created_at=at)
        for run in runs
        for seq, kind in ((1, EventType.RUN_CREATED), (2, EventType.RUN_COMPLETED))
    )
    return [run.id for run in runs]


def test_lifecycle_purge_archives_and_deletes_runs_in_batches(
    run_now: Callable[..., Execution],
    archive_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = finished_run(run_now, "tests.lifecycle.tell", "batch")
    age(real, 40)
    loaded = _load_finished_runs(LOADED, 40)
    young = finished_run(run_now, "tests.lifecycle.tell", "young")
    before = snapshot(real)
    sample = snapshot(loaded[700])
    batches: list[int] = []
    monkeypatch.setattr(retention, "BATCH", 500)
    original = retention._batches

    def counted(rule: Any, archive: bool) -> Any:
        for batch in original(rule, archive):
            batches.append(len(batch[0]))
            yield batch

    monkeypatch.setattr(retention, "_batches", counted)
    out = StringIO()

    call_command("fanfold", "purge", "--older-than", "30d", "--archive", "--json", stdout=out)

    record = json.loads(out.getvalue())
    assert (record["runs"], record["archived"]) == (LOADED + 1, LOADED + 1)
    assert batches == [500, 500, 200]
    assert set(Run.objects.values_list("id", flat=True)) == {young}
    for model in SECTIONS.values():
        assert not model._default_manager.exclude(run_id=young).exists()
    archives = {path.stem for path in (archive_folder / "runs").iterdir()}
    assert archives == {str(run_id) for run_id in [real, *loaded]}
    assert read_archive(loaded[700])["run"]["id"] == str(loaded[700])

    call_command("fanfold", "restore", str(real), stdout=StringIO())
    call_command("fanfold", "restore", str(loaded[700]), stdout=StringIO())

    assert snapshot(real) == before
    assert snapshot(loaded[700]) == sample
    assert Run.objects.count() == 3


@pytest.fixture
def rests(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """25 finished runs purged 10 a batch, on a clock whose every reading is one second
    later (the retention module's only); returns the rests asked for."""
    _load_finished_runs(25, 40)
    monkeypatch.setattr(retention, "BATCH", 10)
    clock = iter(float(t) for t in range(1000))
    asked: list[float] = []
    monkeypatch.setattr(
        retention, "time", SimpleNamespace(monotonic=lambda: next(clock), sleep=asked.append)
    )
    return asked


def test_lifecycle_purge_rests_after_each_batch_by_its_pace(rests: list[float]) -> None:
    report = retention.purge(retention.older_than(timedelta(days=30)), pace=0.5)

    assert (report.runs, report.batches) == (25, 3)
    assert rests == [0.5, 0.5, 0.5]  # half of each batch's (one second's) time
    assert not Run.objects.exists()


@pytest.mark.parametrize(("deadline", "batches", "slept"), [(4.0, 1, []), (7.0, 2, [5.0])])
def test_lifecycle_purge_never_rests_into_its_deadline(
    rests: list[float], deadline: float, batches: int, slept: list[float]
) -> None:
    # Each batch "takes" a second: a rest of nine, capped at MAX_REST (5 s).
    report = retention.purge(retention.older_than(timedelta(days=30)), pace=9.0, deadline=deadline)

    assert (report.batches, report.runs, rests) == (batches, 10 * batches, slept)
    assert Run.objects.count() == 25 - 10 * batches


def test_lifecycle_purge_without_pace_never_rests(monkeypatch: pytest.MonkeyPatch) -> None:
    _load_finished_runs(12, 40)
    monkeypatch.setattr(retention, "BATCH", 5)
    rests: list[float] = []
    monkeypatch.setattr(
        retention, "time", SimpleNamespace(monotonic=time.monotonic, sleep=rests.append)
    )

    call_command("fanfold", "purge", "--older-than", "30d", "--pace", "0", stdout=StringIO())

    assert rests == [] and not Run.objects.exists()


@pytest.mark.parametrize("pace", ["-1", "nan", "11", "fast"])
def test_lifecycle_purge_refuses_a_pace_outside_zero_to_ten(pace: str) -> None:
    _load_finished_runs(1, 40)
    with pytest.raises(CommandError, match="--pace: must be a number from 0 to 10"):
        call_command("fanfold", "purge", "--older-than", "30d", "--pace", pace)
    assert Run.objects.count() == 1
