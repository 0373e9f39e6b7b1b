"""`bench tasks`: the no-op Django task run through Fanfold's Tasks backend."""

from __future__ import annotations

from runtime.django_tasks.compat import task


@task
def fanfold_noop(i: int) -> int:
    return i
