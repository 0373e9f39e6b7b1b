"""`rekey` and offloaded files: a replaced file is deleted once no row of its run names it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lifecycle_flows  # noqa: F401  (registers the workflows)
import pytest

from runtime.core.payload_keys import generate_key
from runtime.executor import Execution, ExecutionOutcome
from runtime.lifecycle import rekey as rekey_module
from runtime.lifecycle.rekey import rekey_all
from runtime.models import Event, EventType, Run
from runtime.payloads.codec import OFFLOADED
from runtime.services import start_run
from runtime.store.lifecycle.payload_rows import PAYLOAD_TABLES, names_file, read_rows

BLOB = "b" * 600_000


@pytest.fixture
def payload_folder(settings: Any, tmp_path: Path) -> Path:
    folder = tmp_path / "payloads"
    settings.STORAGES = {
        **settings.STORAGES,
        "fanfold_payloads": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": folder},
        },
    }
    return folder


def _big_run(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None], key: str
) -> Run:
    fanfold_settings(MAX_PAYLOAD_BYTES=str(2 * 1024 * 1024), PAYLOAD_KEYS=[key])
    started, _ = start_run("tests.lifecycle.big", [BLOB])
    assert run_now(started.id).outcome is ExecutionOutcome.COMPLETED
    return Run.objects.get(id=started.id)


def _names(folder: Path, run: Run) -> set[str]:
    return {f"{run.id}/{path.name}" for path in (folder / str(run.id)).iterdir()}


def test_lifecycle_rekey_deletes_the_files_it_replaced(
    run_now: Callable[..., Execution],
    fanfold_settings: Callable[..., None],
    payload_folder: Path,
) -> None:
    old, new = generate_key(), generate_key()
    run = _big_run(run_now, fanfold_settings, old)
    before = _names(payload_folder, run)
    assert len(before) == 2 and all(names_file(run.id, name) for name in before)
    fanfold_settings(MAX_PAYLOAD_BYTES=str(2 * 1024 * 1024), PAYLOAD_KEYS=[new, old])

    report = rekey_all()

    after = _names(payload_folder, run)
    assert report.files_deleted == 2
    assert len(after) == 2 and after.isdisjoint(before)
    assert not any(names_file(run.id, name) for name in before)
    fanfold_settings(MAX_PAYLOAD_BYTES=str(2 * 1024 * 1024), PAYLOAD_KEYS=[new])
    assert Run.objects.get(id=run.id).input["args"] == [BLOB]
    assert rekey_all().files_deleted == 0


def test_lifecycle_rekey_keeps_a_replaced_file_another_row_still_names(
    run_now: Callable[..., Execution],
    fanfold_settings: Callable[..., None],
    payload_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old, new = generate_key(), generate_key()
    run = _big_run(run_now, fanfold_settings, old)
    reference = _stored_input(run)
    assert OFFLOADED in reference
    shared = reference[OFFLOADED]["name"]
    # An event of the run that names the input's very file (a copy of the same value).
    last = Event.objects.filter(run_id=run.id).order_by("-seq").first()
    assert last is not None
    Event.objects.create(
        run_id=run.id,
        seq=last.seq + 1,
        type=EventType.RUN_CREATED,
        payload=reference,
        created_at=last.created_at,
    )
    fanfold_settings(MAX_PAYLOAD_BYTES=str(2 * 1024 * 1024), PAYLOAD_KEYS=[new, old])
    writes = rekey_module.write_back

    def events_changed_meanwhile(table: Any, *args: Any) -> bool:
        return False if table.model is Event else writes(table, *args)

    monkeypatch.setattr(rekey_module, "write_back", events_changed_meanwhile)
    first = rekey_all()
    assert first.skipped >= 1
    assert (payload_folder / shared).exists() and names_file(run.id, shared)

    monkeypatch.setattr(rekey_module, "write_back", writes)
    second = rekey_all()
    assert second.files_deleted >= 1
    assert not (payload_folder / shared).exists()
    fanfold_settings(MAX_PAYLOAD_BYTES=str(2 * 1024 * 1024), PAYLOAD_KEYS=[new])
    copy = Event.objects.get(run_id=run.id, seq=last.seq + 1)
    assert copy.payload["args"] == [BLOB]


def _stored_input(run: Run) -> dict[str, Any]:
    """The run's input as its row holds it (a reference to the payload storage)."""
    for row in read_rows(PAYLOAD_TABLES[0], None, 1000):
        if str(row[0]) == str(run.id):
            return dict(json.loads(row[2]) if isinstance(row[2], str) else row[2])
    raise LookupError(run.id)
