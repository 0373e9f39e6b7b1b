"""Offloaded payloads: files in the Django storage `STORAGES["fanfold_payloads"]`.

Each run's files are named `<run id>/<digest>.json`, so that deleting a run's payloads is a
listing of its folder, and writing the same value for the same run twice writes one file.
A file holds the value's stored form as JSON text (runtime.payloads.codec): encrypted when
payload keys are configured. This module knows the storage API, not the runtime's models.
"""

from __future__ import annotations

import os
import re
import uuid
from contextlib import suppress

from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, InvalidStorageError, Storage, storages

from runtime.core.payload_errors import (
    OffloadedPayloadDamaged,
    OffloadedPayloadMissing,
    OffloadStorageMissing,
    PayloadFormatUnknown,
)

STORAGE_ALIAS = "fanfold_payloads"
# A name this module wrote: the run's folder, a hex digest, and the suffix a storage may add
# when two writers raced for one name (Storage.get_available_name).
_NAME = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/[0-9a-f]{64}\w*\.json"
)


def payload_storage() -> Storage:
    """The configured payload storage; raises OffloadStorageMissing when there is none."""
    try:
        return storages[STORAGE_ALIAS]
    except InvalidStorageError:
        raise OffloadStorageMissing(
            f'a payload is over FANFOLD_OFFLOAD_BYTES and STORAGES["{STORAGE_ALIAS}"] is not '
            "configured (or set FANFOLD_OFFLOAD_BYTES=0 to keep every payload in the database)"
        ) from None


def has_payload_storage() -> bool:
    """Whether STORAGES["fanfold_payloads"] is configured (without it payloads stay inline)."""
    try:
        storages[STORAGE_ALIAS]
    except InvalidStorageError:
        return False
    return True


def write_offloaded(run_id: uuid.UUID, digest: str, content: bytes) -> str:
    """Store `content` as the run's file named by `digest`, once; returns the file's name.

    A file already there under that name holds the same value and is kept. When two writers
    race, the storage gives the second another name, which is the one returned.
    """
    storage = payload_storage()
    name = f"{run_id}/{digest}.json"
    if storage.exists(name):
        return name
    return str(storage.save(name, ContentFile(content)))


def read_offloaded(name: str, size: int) -> bytes:
    """The content of an offloaded file, checked against the size its reference recorded."""
    if not _NAME.fullmatch(name):
        raise PayloadFormatUnknown(f"an offloaded payload's reference names {name!r}")
    try:
        with payload_storage().open(name, "rb") as file:
            content = file.read()
    except FileNotFoundError:
        raise OffloadedPayloadMissing(
            f'offloaded payload {name} is missing from STORAGES["{STORAGE_ALIAS}"]'
        ) from None
    if len(content) != size:
        raise OffloadedPayloadDamaged(
            f"offloaded payload {name} has {len(content)} bytes; {size} were written"
        )
    return bytes(content)


def delete_offloaded(name: str) -> None:
    """Delete one offloaded file (one that `rekey` replaced); a missing file is no error."""
    if _NAME.fullmatch(name):
        payload_storage().delete(name)


def _is_folder(storage: FileSystemStorage, folder: str) -> bool:
    # A run id's text has no separator, so the folder is joined without safe_join's checks:
    # the retention's purge asks this of every run it deletes.
    return os.path.isdir(os.path.join(storage.location, folder))


def delete_run_payloads(run_id: uuid.UUID) -> int:
    """Delete every offloaded file of a run; returns how many there were.

    Call it once the run's rows are deleted (a file of a row still there would be missing).
    """
    storage = payload_storage()
    folder = str(run_id)
    if type(storage) is FileSystemStorage and not _is_folder(storage, folder):
        return 0  # the common case (a run with nothing offloaded) in one stat
    try:
        _, names = storage.listdir(folder)
    except FileNotFoundError:
        return 0
    for name in names:
        storage.delete(f"{folder}/{name}")
    # The folder itself, on a filesystem storage; one still in use (a write meanwhile) stays.
    with suppress(OSError):
        storage.delete(folder)
    return len(names)
