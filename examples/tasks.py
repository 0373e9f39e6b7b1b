"""Example Django tasks, run by Fanfold's Tasks backend: docs/django-tasks.md."""

from __future__ import annotations

from runtime import RetryPolicy
from runtime.django_tasks.compat import TaskContext, task


@task
def send_welcome(user_id: int, template: str = "welcome") -> dict[str, object]:
    """A task as Django writes them: module level, JSON arguments, a JSON result."""
    return {"user": user_id, "template": template, "sent": True}


# `retry=` is Fanfold's option (FanfoldBackend's task class); Django's stubs know only theirs.
@task(  # type: ignore[call-overload]
    takes_context=True, retry=RetryPolicy(max_attempts=3, initial_delay=0.1, jitter=False)
)
def sync_contacts(context: TaskContext, account: str) -> str:
    """Fails its first attempt, as a flaky partner API would; Fanfold's policy retries it."""
    if context.attempt == 1:
        raise ConnectionError("partner API unavailable")
    return f"{account} synced on attempt {context.attempt}"
