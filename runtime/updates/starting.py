"""Update-with-start: start a run (or find the run of the idempotency key) and deliver an
update to it, in one call. The update is validated against the workflow before the start, so
a refused update starts nothing."""

from __future__ import annotations

import uuid
from typing import Any

from runtime.core.errors import InvalidArguments
from runtime.registry import WorkflowFunction, registry
from runtime.services import start_run
from runtime.updates.calling import (
    DEFAULT_TIMEOUT,
    accept_update,
    as_timeout,
    outcome,
    validated,
    wait_for_answer,
)


def start_and_update(
    workflow: str | WorkflowFunction[..., Any],
    args: list[Any] | tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    idempotency_key: str,
    update: tuple[str, Any],
    update_id: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    owner: Any = None,
    by: dict[str, Any] | None = None,
) -> tuple[uuid.UUID, bool, Any]:
    """(run id, whether this call started it, the update's reply).

    Raises what `start_run` and `send_update` raise; UpdateRejected or UnknownUpdate start
    nothing. Callers racing on one key share one run; their updates arrive in commit order.
    """
    if not isinstance(update, tuple | list) or len(update) != 2:
        raise InvalidArguments("update must be a (name, payload) pair")
    if not idempotency_key:
        raise InvalidArguments("start_with_update needs an idempotency_key")
    seconds = as_timeout(timeout)
    wf = registry.workflow(workflow)
    name, payload = validated(wf, update[0], update[1])
    run, created = start_run(wf, args, kwargs, idempotency_key=idempotency_key, owner=owner)
    rid, row, _ = accept_update(
        run.id, name, payload, update_id=update_id, by=by, checked_already=True
    )
    return rid, created, outcome(wait_for_answer(rid, row.id, seconds))
