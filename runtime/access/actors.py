"""Who acted, as the run's event log records it."""

from __future__ import annotations

import getpass
import os
from typing import Any


def actor_of(user: Any) -> dict[str, Any] | None:
    """The `by` of an event recording what `user` did: `{"user_id", "username"}`, or None for
    an anonymous request (a callback posted with its token alone).

    Services take it as `by=` and add it to the event they record (runtime.services'
    `with_actor`): cancel (`run_cancelled`), fork and retry (the new run's `run_created`),
    callback posts (`callback_received`); messages and signals sent through the API add it
    to theirs the same way.
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return {"user_id": user.pk, "username": user.get_username()}


def cli_actor() -> dict[str, Any]:
    """The `by` of what `manage.py fanfold` does: no Django user, so the login of whoever ran
    the command, marked as the CLI's (`user_id` None) so it is never taken for an account."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (some containers)
        login = f"uid {os.getuid()}"
    return {"user_id": None, "username": login, "via": "cli"}
