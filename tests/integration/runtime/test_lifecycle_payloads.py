"""Payloads at rest on PostgreSQL: encrypted with keys, large ones in the payload storage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lifecycle_flows  # noqa: F401  (registers the workflows)
import pytest
from django.db import connection
from lifecycle_flows import SECRET

from runtime.core.payload_errors import PayloadKeysMissing
from runtime.core.payload_keys import generate_key
from runtime.executor import Execution, ExecutionOutcome
from runtime.lifecycle.rekey import rekey_all
from runtime.models import Event, Run, Step, StreamChunk
from runtime.services import start_run
from runtime.store.lifecycle.payload_rows import PAYLOAD_TABLES


def stored_texts() -> list[str]:
    """Every payload column of every row, as the database holds it."""
    texts: list[str] = []
    with connection.cursor() as cursor:
        for table in PAYLOAD_TABLES:
            columns = ", ".join(f"{c}::text" for c in table.columns)
            cursor.execute(f"SELECT {columns} FROM {table.name}")
            texts += [t for row in cursor.fetchall() for t in row if t is not None]
    return texts


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


def test_lifecycle_keys_leave_no_payload_in_clear(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None]
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[generate_key()])
    run, _ = start_run("tests.lifecycle.tell", [f"{SECRET}-input"])

    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED

    texts = stored_texts()
    assert len(texts) > 10 and all(SECRET not in t for t in texts)
    assert all('"$ff:enc"' in t for t in texts if t not in ("null",))
    row = Run.objects.get(id=run.id)  # the ORM reads values, as the admin and the API do
    assert row.input == {"args": [f"{SECRET}-input"], "kwargs": {}}
    assert row.result["second"] == [f"{SECRET}-result", f"{SECRET}-input"]
    assert Step.objects.get(run=run, position=1).result["secret"] == f"{SECRET}-result"
    assert Event.objects.filter(run=run, seq=1).get().payload["input"]["args"] == [
        f"{SECRET}-input"
    ]
    chunk = StreamChunk.objects.get(run=run)
    assert chunk.value == {"chunk": f"{SECRET}-input-{SECRET}-chunk"}


def test_lifecycle_missing_key_is_a_clear_error_never_ciphertext(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None]
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[generate_key()])
    run, _ = start_run("tests.lifecycle.tell", ["x"])
    fanfold_settings(PAYLOAD_KEYS=[])

    with pytest.raises(PayloadKeysMissing, match="FANFOLD_PAYLOAD_KEYS is not set"):
        Run.objects.get(id=run.id)


def test_lifecycle_rekey_moves_every_payload_to_the_first_key(
    run_now: Callable[..., Execution], fanfold_settings: Callable[..., None]
) -> None:
    old, new = generate_key(), generate_key()
    fanfold_settings(PAYLOAD_KEYS=[old])
    run, _ = start_run("tests.lifecycle.tell", ["w"])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED
    before = stored_texts()
    fanfold_settings(PAYLOAD_KEYS=[new, old])

    report = rekey_all()

    assert sum(report.rewritten.values()) == len([t for t in before if t != "null"])
    assert set(stored_texts()).isdisjoint(before)
    fanfold_settings(PAYLOAD_KEYS=[new])  # the old key is no longer needed
    assert Run.objects.get(id=run.id).result["first"]["word"] == "w"
    assert sum(rekey_all().rewritten.values()) == 0  # a second pass writes nothing


def test_lifecycle_large_input_goes_to_the_payload_storage(
    run_now: Callable[..., Execution],
    fanfold_settings: Callable[..., None],
    payload_folder: Path,
) -> None:
    fanfold_settings(MAX_PAYLOAD_BYTES=str(2 * 1024 * 1024), PAYLOAD_KEYS=[generate_key()])
    blob = "b" * 600_000

    run, _ = start_run("tests.lifecycle.big", [blob])
    assert run_now(run.id).outcome is ExecutionOutcome.COMPLETED

    assert sum(len(t) for t in stored_texts()) < 100_000
    files = list((payload_folder / str(run.id)).iterdir())
    assert len(files) == 2  # the run's input and its run_created event
    assert all(blob[:1000] not in f.read_text() for f in files)  # encrypted there too
    assert Run.objects.get(id=run.id).input["args"] == [blob]
