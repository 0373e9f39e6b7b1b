"""The write seam of payloads: every value a checkpoint records, in the form its column stores.

The sink packs a batch here (runtime.store.history.batch) before it is split between its paths,
so both write the same stored forms (runtime.payloads.packing). With no payload keys, a
checkpoint whose measured size is within FANFOLD_OFFLOAD_BYTES holds no value that could go
to the payload storage: its values are only checked for a `$ff:` form to escape (one type
check each), and the write is passed on as it is. Otherwise each value is packed: encrypted,
and offloaded when its stored form is over the limit.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from runtime import conf
from runtime.core.branches import BranchReport
from runtime.core.writes import UNSET, EventDraft, HistoryWrite, RunPatch, StepRow
from runtime.payloads.codec import PayloadCodec, reserved_form
from runtime.payloads.packing import codec_for, pack


class StoredForms:
    """Packs values with the settings of the moment (keys, offload limit)."""

    def __init__(self) -> None:
        settings = conf.get()
        self.codec: PayloadCodec = codec_for(settings.PAYLOAD_KEYS)
        self.limit = settings.OFFLOAD_BYTES
        self.encrypts = self.codec.encrypts

    def plain(self, bound: int | None) -> bool:
        """Whether values of at most `bound` JSON bytes (None: unknown) are stored as they are,
        escaped where needed."""
        if self.encrypts:
            return False
        return not self.limit or (bound is not None and bound <= self.limit)

    def form(self, value: Any, run_id: uuid.UUID, bound: int | None = None) -> Any:
        """The stored form of one value of run `run_id` (`bound`: its size is at most that)."""
        if value is None:
            return None
        if self.plain(bound):
            return self.codec.encode(value)
        return pack(value, run_id)

    def history_write(self, write: HistoryWrite, bound: int | None) -> HistoryWrite:
        """`write` with every payload in its stored form (the same object when none changes)."""
        if self.plain(bound) and not _needs_escape(write):
            return write
        run_id = write.run_id
        events = tuple(
            dataclasses.replace(e, payload=self.form(e.payload, run_id, bound))
            for e in write.events
        )
        steps = tuple(self.step_row(row, run_id, bound) for row in write.steps)
        patch = write.run
        if patch is not None:
            patch = dataclasses.replace(
                patch,
                result=self._patched(patch.result, run_id, bound),
                error=self._patched(patch.error, run_id, bound),
            )
        chunks = tuple(
            dataclasses.replace(c, value=self.form(c.value, run_id, bound)) for c in write.chunks
        )
        return dataclasses.replace(write, events=events, steps=steps, run=patch, chunks=chunks)

    def step_row(self, row: StepRow, run_id: uuid.UUID, bound: int | None) -> StepRow:
        return dataclasses.replace(
            row,
            input=self.form(row.input, run_id, bound),
            result=self.form(row.result, run_id, bound),
            error=self.form(row.error, run_id, bound),
        )

    def _patched(self, value: Any, run_id: uuid.UUID, bound: int | None) -> Any:
        return value if value is UNSET else self.form(value, run_id, bound)


def _needs_escape(write: HistoryWrite) -> bool:
    """Whether a value of the write is a one-key object with a `$ff:` key (to be escaped).

    The hot path of every checkpoint without keys: one loop and a type check per value, since
    almost no value is a dict of one key."""
    values: list[Any] = [event.payload for event in write.events]
    for row in write.steps:
        values += (row.input, row.result, row.error)
    if write.chunks:
        values += [chunk.value for chunk in write.chunks]
    patch: RunPatch | None = write.run
    if patch is not None:
        values += (patch.result, patch.error)
    for value in values:
        if isinstance(value, dict) and len(value) == 1 and reserved_form(value) is not None:
            return True
    return False


def report_event(draft: EventDraft, report: BranchReport, forms: StoredForms) -> EventDraft:
    """A branch report's event with its payload in stored form."""
    bound = None if report.result_bytes is None else report.result_bytes + 256
    return dataclasses.replace(draft, payload=forms.form(draft.payload, report.run_id, bound))


def report_value(value: Any, report: BranchReport, forms: StoredForms) -> Any:
    """A branch report's result or error in stored form."""
    bound = None if report.result_bytes is None else report.result_bytes + 256
    return forms.form(value, report.run_id, bound)
