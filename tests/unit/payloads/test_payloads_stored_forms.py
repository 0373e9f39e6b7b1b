"""The write seam of payloads (runtime.store.history.payload_forms) and the inline fallback of
`pack`.

With no keys, a checkpoint within FANFOLD_OFFLOAD_BYTES passes through as it is after one
reserved-form check per value; with keys every payload column of the write is packed; without
the payload storage (check fanfold.W004) a large payload stays inline.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runtime.checkpoint.batching import Checkpoint
from runtime.core.branches import BranchClaim, BranchReport
from runtime.core.payload_keys import generate_key
from runtime.core.writes import (
    UNSET,
    ChunkDraft,
    EventDraft,
    HistoryWrite,
    LeaseGuard,
    RunPatch,
    StepRow,
)
from runtime.payloads import packing
from runtime.payloads.codec import ENCRYPTED, ESCAPED, OFFLOADED, reserved_form
from runtime.payloads.packing import pack, unpack
from runtime.store.history import payload_forms
from runtime.store.history.batch import SortedBatch
from runtime.store.history.payload_forms import StoredForms, report_value

RUN = uuid.UUID("6f1c0000-0000-4000-8000-000000000001")
AT = datetime(2026, 12, 3, tzinfo=UTC)
SECRET = {"card": "4111-secret"}


def _write(
    value: Any = SECRET, *, result: Any = UNSET, error: Any = UNSET, step_error: Any = None
) -> HistoryWrite:
    row = StepRow(
        id=uuid.uuid4(),
        position=1,
        name="charge",
        kind="step",
        status="completed",
        attempt=1,
        created_at=AT,
        input=value,
        result=value,
        error=step_error,
    )
    return HistoryWrite(
        run_id=RUN,
        guard=LeaseGuard("token"),
        events=(EventDraft("step_completed", AT, row.id, {"result": value}),),
        steps=(row,),
        run=RunPatch(result=result, error=error),
    )


def _payloads(write: HistoryWrite) -> list[Any]:
    row = write.steps[0]
    patch = write.run
    assert patch is not None
    return [write.events[0].payload, row.input, row.result, row.error, patch.result, patch.error]


@pytest.fixture
def keyed(settings: Any) -> str:
    key = generate_key()
    settings.FANFOLD = {"PAYLOAD_KEYS": [key]}
    return key


def test_stored_forms_without_keys_pass_a_write_through_after_a_type_check_per_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[Any] = []

    def counting(value: Any) -> str | None:
        checked.append(value)
        return reserved_form(value)

    def no_pack(*_: Any) -> Any:
        raise AssertionError("a plain write within the limit is never packed")

    monkeypatch.setattr(payload_forms, "reserved_form", counting)
    monkeypatch.setattr(payload_forms, "pack", no_pack)
    write = _write(result=[1, 2])
    assert StoredForms().history_write(write, 4096) is write
    # Only one-key objects get a look at their key: the event's payload, the step's input
    # and result ({"card": ...}); a list, None and UNSET stop at the type check.
    assert len(checked) == 3


def test_stored_forms_without_keys_escape_a_value_that_looks_like_a_stored_form() -> None:
    lookalike = {ENCRYPTED: "not a token of ours"}
    packed = StoredForms().history_write(_write(lookalike), 4096)
    row = packed.steps[0]
    assert reserved_form(row.input) == ESCAPED and unpack(row.input) == lookalike
    assert unpack(packed.events[0].payload) == {"result": lookalike}


def test_stored_forms_with_keys_pack_every_payload_column(keyed: str) -> None:
    write = _write(result={"total": SECRET}, error={"why": "4111-secret"}, step_error={"e": 1})
    packed = StoredForms().history_write(write, 4096)
    stored = _payloads(packed)
    assert all(reserved_form(value) == ENCRYPTED for value in stored)
    assert "4111" not in repr(stored)
    assert [unpack(value) for value in stored] == _payloads(write)


def test_stored_forms_with_keys_leave_none_and_unset_as_they_are(keyed: str) -> None:
    packed = StoredForms().history_write(_write(step_error=None), None)
    row, patch = packed.steps[0], packed.run
    assert row.error is None
    assert patch is not None and patch.result is UNSET and patch.error is UNSET


def test_stored_forms_measure_a_value_of_unknown_size(settings: Any, tmp_path: Path) -> None:
    settings.FANFOLD = {"OFFLOAD_BYTES": 1024}
    settings.STORAGES = {**settings.STORAGES, "fanfold_payloads": _files(tmp_path)}
    forms = StoredForms()
    assert forms.plain(1024) and not forms.plain(1025) and not forms.plain(None)
    small, large = {"n": 1}, {"text": "x" * 2000}
    assert forms.form(small, RUN) == small
    reference = forms.form(large, RUN)
    assert reserved_form(reference) == OFFLOADED
    assert reference[OFFLOADED]["name"].startswith(f"{RUN}/")
    assert unpack(reference) == large


def test_stored_forms_offload_nothing_when_the_limit_is_zero(settings: Any) -> None:
    settings.FANFOLD = {"OFFLOAD_BYTES": 0}
    write = _write({"text": "x" * 5000})
    assert StoredForms().history_write(write, None) is write


def test_sorted_batch_packs_history_writes_with_their_sessions(keyed: str) -> None:
    claim = BranchClaim(run_id=RUN, step_id=uuid.uuid4(), attempt=1)
    batch = [
        Checkpoint(session="a", payload=_write(), size=600),
        Checkpoint(session="b", payload=claim, size=64),
        Checkpoint(session="c", payload=None, size=0),
    ]
    sorted_batch = SortedBatch.of(batch)
    [(session, write)] = sorted_batch.history_writes
    assert session == "a" and reserved_form(write.steps[0].result) == ENCRYPTED
    assert sorted_batch.branch_writes.claims == [claim]


def test_report_value_packs_a_branch_result_with_keys(keyed: str) -> None:
    report = BranchReport(
        run_id=RUN,
        step_id=uuid.uuid4(),
        position=2,
        group_id=uuid.uuid4(),
        attempt=1,
        outcome="completed",
        started_at=AT,
        finished_at=AT,
        result=SECRET,
        result_bytes=27,
    )
    stored = report_value(report.result, report, StoredForms())
    assert reserved_form(stored) == ENCRYPTED and unpack(stored) == SECRET


def _files(location: Path) -> dict[str, Any]:
    return {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": location},
    }


def _without_payload_storage(settings: Any) -> None:
    settings.STORAGES = {k: v for k, v in settings.STORAGES.items() if k != "fanfold_payloads"}


def test_pack_keeps_a_large_payload_inline_without_the_storage(settings: Any) -> None:
    _without_payload_storage(settings)
    settings.FANFOLD = {"OFFLOAD_BYTES": 100}
    large = {"text": "y" * 1000}
    assert not packing.has_payload_storage()
    assert pack(large, RUN) == large
    assert StoredForms().form(large, RUN) == large


def test_pack_keeps_a_large_encrypted_payload_inline_without_the_storage(
    settings: Any, keyed: str
) -> None:
    _without_payload_storage(settings)
    settings.FANFOLD = {"OFFLOAD_BYTES": 100, "PAYLOAD_KEYS": [keyed]}
    large = {"text": "y" * 1000}
    stored = StoredForms().history_write(_write(large), None)
    assert all(reserved_form(value) in (ENCRYPTED, None) for value in _payloads(stored))
    assert unpack(stored.steps[0].input) == large


def test_stored_forms_pack_the_stream_chunks_a_write_carries(keyed: str) -> None:
    write = dataclasses.replace(_write(), chunks=(ChunkDraft("agent", SECRET),))
    [chunk] = StoredForms().history_write(write, 4096).chunks
    assert chunk.stream == "agent" and reserved_form(chunk.value) == ENCRYPTED
    assert unpack(chunk.value) == SECRET


def test_stored_forms_escape_a_stream_chunk_that_looks_like_a_stored_form() -> None:
    lookalike = {ENCRYPTED: "not a token of ours"}
    write = dataclasses.replace(_write([1]), chunks=(ChunkDraft("agent", lookalike),))
    [chunk] = StoredForms().history_write(write, 4096).chunks
    assert reserved_form(chunk.value) == ESCAPED and unpack(chunk.value) == lookalike
