"""Archives: one JSON document per run in the Django storage `STORAGES["fanfold_archive"]`.

A document holds the run's row and the rows of its steps, events, fan-out groups and stream
chunks, column by column. Payload columns hold the value in the codec's form (encrypted when
payload keys are configured, never a reference to the payload storage, whose files go with
the run); `restore` packs them again for the database. Ids, seqs and timestamps come back
exactly.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import InvalidStorageError, Storage, storages
from django.db import models

from runtime.core.lifecycle_errors import (
    ArchiveNotFound,
    ArchiveStorageMissing,
    ArchiveUnreadable,
)
from runtime.models import (
    Event,
    FanoutGroup,
    Run,
    RunUpdate,
    SearchAttribute,
    SearchPending,
    Step,
    StreamChunk,
)
from runtime.models.messaging import Message, RunValue, SignalWait
from runtime.models.payloads import PayloadField
from runtime.payloads.codec import json_text
from runtime.payloads.packing import current_codec, pack
from runtime.store.lifecycle.archive_rows import insert_restored, runs_by_id, section_rows

STORAGE_ALIAS = "fanfold_archive"
FORMAT = "fanfold.run/1"
# The document's sections: each a model whose rows reference the run by `run_id`.
SECTIONS: dict[str, type[models.Model]] = {
    "steps": Step,
    "events": Event,
    "fanout_groups": FanoutGroup,
    "stream_chunks": StreamChunk,
    "messages": Message,
    "values": RunValue,
    "signal_waits": SignalWait,
    "updates": RunUpdate,  # absent from archives written before updates: restored as none
    # Read before the attribute rows: a drain that moves a run's pending row in between then
    # leaves it in both sections (a restored pending row is drained again, a no-op), never in
    # neither. Absent from archives written before the pending list: restored as none.
    "search_pending": SearchPending,
    "search_attributes": SearchAttribute,
}
_ORDER = {
    "steps": "position",
    "events": "seq",
    "fanout_groups": "first_position",
    "signal_waits": "position",
}


def archive_storage() -> Storage:
    """The configured archive storage; raises ArchiveStorageMissing when there is none."""
    try:
        return storages[STORAGE_ALIAS]
    except InvalidStorageError:
        raise ArchiveStorageMissing(
            f'archiving runs needs STORAGES["{STORAGE_ALIAS}"], which is not configured'
        ) from None


def archive_name(run_id: uuid.UUID) -> str:
    return f"runs/{run_id}.json"


def _row(obj: models.Model) -> dict[str, Any]:
    codec = current_codec()
    row: dict[str, Any] = {}
    for field in obj._meta.concrete_fields:
        value = getattr(obj, field.attname)
        if isinstance(field, PayloadField):
            value = codec.encode(value)
        elif isinstance(value, uuid.UUID):
            value = str(value)
        elif hasattr(value, "isoformat"):
            value = value.isoformat()
        row[field.attname] = value
    return row


def documents(run_ids: Sequence[uuid.UUID]) -> Iterable[tuple[uuid.UUID, dict[str, Any]]]:
    """The archive documents of these runs, a query per section for all of them."""
    sections: dict[str, dict[uuid.UUID, list[dict[str, Any]]]] = {}
    for name, model in SECTIONS.items():
        rows: dict[uuid.UUID, list[dict[str, Any]]] = defaultdict(list)
        for obj in section_rows(model, run_ids, _ORDER.get(name, "pk")):
            rows[obj.run_id].append(_row(obj))  # type: ignore[attr-defined]
        sections[name] = rows
    for run in runs_by_id(run_ids):
        doc: dict[str, Any] = {"format": FORMAT, "run": _row(run)}
        doc.update({name: sections[name].get(run.id, []) for name in SECTIONS})
        yield run.id, doc


def write_archives(run_ids: Sequence[uuid.UUID]) -> int:
    """Write the archive document of each run (replacing an older one); returns how many."""
    storage = archive_storage()
    written = 0
    for run_id, doc in documents(run_ids):
        name = archive_name(run_id)
        if storage.exists(name):
            storage.delete(name)  # archived before, restored, archived again: the latest wins
        storage.save(name, ContentFile(json_text(doc).encode("utf-8")))
        written += 1
    return written


def read_archive(run_id: uuid.UUID) -> dict[str, Any]:
    """The archive document of a run; raises ArchiveNotFound or ArchiveUnreadable."""
    storage = archive_storage()
    try:
        with storage.open(archive_name(run_id), "rb") as file:
            doc = json.loads(file.read())
    except FileNotFoundError:
        raise ArchiveNotFound(f"no archive of run {run_id} in {STORAGE_ALIAS}") from None
    except ValueError:
        raise ArchiveUnreadable(f"the archive of run {run_id} is not JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ArchiveUnreadable(f"the archive of run {run_id} is not a {FORMAT} document")
    return doc


def _instance(model: type[models.Model], row: dict[str, Any], run_id: uuid.UUID) -> Any:
    codec = current_codec()
    values: dict[str, Any] = {}
    for field in model._meta.concrete_fields:
        if field.attname not in row:
            continue
        value = row[field.attname]
        if isinstance(field, PayloadField):
            value = pack(codec.decode(value), run_id)
        elif value is not None:
            value = field.to_python(value)
        values[field.attname] = value
    return model(**values)


def restore(run_id: uuid.UUID) -> Run:
    """Re-create an archived run with its records, exactly as archived, in one transaction.

    Raises RunExists when the run is in the database (nothing is overwritten), and the
    errors of `read_archive`. Offloaded payloads are written to the storage again.
    """
    doc = read_archive(run_id)
    try:
        run = _instance(Run, doc["run"], run_id)
        parts = {
            name: [_instance(model, row, run_id) for row in doc.get(name, [])]
            for name, model in SECTIONS.items()
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ArchiveUnreadable(f"the archive of run {run_id} is damaged: {exc}") from None
    if run.id != run_id:
        raise ArchiveUnreadable(f"the archive of run {run_id} holds run {run.id}")
    return insert_restored(run, {name: (SECTIONS[name], rows) for name, rows in parts.items()})
