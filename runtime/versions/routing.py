"""Which version a run's messages are for: the dispatcher's second routing (runtime.apps).

The process that started a run, or claimed it, knows its version (`remember`); any other
reads it from the run once (`version_of`) and keeps it among the last 10,000. A run's version
changes only by an upgrade (`fanfold versions upgrade`), whose process forgets the runs it
moved; another process that still remembers the old version sends to the old version's queue,
where the upgraded run is claimed by no one, and the run sweep sends it again to the new one.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable

from runtime.core.versions import UNPINNED
from runtime.store.runs.versions import run_version

_REMEMBERED = 10_000

_lock = threading.Lock()
_known: OrderedDict[uuid.UUID, str] = OrderedDict()


def remember(run_id: uuid.UUID, version: str) -> None:
    """Note in this process that `run_id` is pinned to `version`."""
    with _lock:
        _known[run_id] = version
        _known.move_to_end(run_id)
        if len(_known) > _REMEMBERED:
            _known.popitem(last=False)


def forget(run_ids: Iterable[uuid.UUID]) -> None:
    """Forget what this process knew of these runs' versions (they were moved)."""
    with _lock:
        for run_id in run_ids:
            _known.pop(run_id, None)


def version_of(run_id: uuid.UUID) -> str:
    """The version `run_id`'s messages are for ("" for a run older than versions, or none)."""
    with _lock:
        known = _known.get(run_id)
    if known is not None:
        return known
    found = run_version(run_id)
    version = UNPINNED if found is None else found
    if found is not None:
        remember(run_id, version)
    return version
