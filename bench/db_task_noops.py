"""`bench tasks`: the same no-op Django task on django-tasks-db's backend (alias "db")."""

from __future__ import annotations

from runtime.django_tasks.compat import task


@task(backend="db")
def db_noop(i: int) -> int:
    return i
