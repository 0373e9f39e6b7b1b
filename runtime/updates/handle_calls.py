"""`RunHandle.update` and `aupdate`: a mixin of runtime.handles.RunHandle, so that the handle
keeps to its size while the update calls keep their full signatures here."""

from __future__ import annotations

import functools
import uuid
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

from runtime.store.connection import closing_connections
from runtime.updates.calling import DEFAULT_TIMEOUT, send_update

T = TypeVar("T")


class UpdateCalls:
    """The update calls of a run's handle."""

    id: uuid.UUID

    def update(
        self,
        name: str,
        payload: Any = None,
        *,
        update_id: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Any:
        """Send update `name` (declared by the workflow) and return the run's reply.

        The workflow's validator runs here first; ValueError or UpdateRejected refuse it
        before anything is recorded (UpdateRejected). Raises UpdateRejected if the run rejects
        it, TimeoutError after `timeout` seconds (the update stays accepted: `get_update` reads
        it later), RunFailed / RunCancelled if the run ends without answering, RunFinished for
        a finished run and UnknownUpdate for an undeclared name. A repeated `update_id`
        applies once and returns the first reply.
        """
        return send_update(self.id, name, payload, update_id=update_id, timeout=timeout)

    async def aupdate(
        self,
        name: str,
        payload: Any = None,
        *,
        update_id: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Any:
        """`update()` for async callers; the wait happens in a thread of its own."""
        call = functools.partial(send_update, self.id, name, payload, update_id=update_id,
                                 timeout=timeout)  # fmt: skip
        return await sync_to_async(closing_connections(call), thread_sensitive=False)()
