"""Update-with-start for Python callers: `start_with_update` and `astart_with_update`, which
return the run's handle with the update's reply (runtime.updates.starting does the work)."""

from __future__ import annotations

import functools
from typing import Any

from asgiref.sync import sync_to_async

from runtime.handles import RunHandle
from runtime.registry import WorkflowFunction
from runtime.store.connection import closing_connections
from runtime.updates.calling import DEFAULT_TIMEOUT
from runtime.updates.starting import start_and_update


def start_with_update(
    workflow: str | WorkflowFunction[..., Any],
    *args: Any,
    idempotency_key: str,
    update: tuple[str, Any],
    update_id: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    owner: Any = None,
    **kwargs: Any,
) -> tuple[RunHandle[Any], Any]:
    """Start a run of `workflow` unless `idempotency_key` names one already, then send it
    `update` (a (name, payload) pair) as `RunHandle.update` does: (its handle, the reply).
    A refused update (validator) starts nothing."""
    rid, created, reply = start_and_update(
        workflow, args, kwargs, idempotency_key=idempotency_key, update=update,
        update_id=update_id, timeout=timeout, owner=owner,
    )  # fmt: skip
    return RunHandle(rid, created), reply


async def astart_with_update(
    workflow: str | WorkflowFunction[..., Any], *args: Any, **options: Any
) -> tuple[RunHandle[Any], Any]:
    """`start_with_update` for async callers; the wait happens in a thread of its own."""
    call = functools.partial(start_with_update, workflow, *args, **options)
    return await sync_to_async(closing_connections(call), thread_sensitive=False)()
