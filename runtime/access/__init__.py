"""Owners and permissions (contract 2e): who sees and acts on which runs and schedules.

The API and the admin ask this package; the runtime's services take no user (the CLI and
Python callers act as the operator). Nothing here runs on the hot path: a run's owner is a
column read with the run, and the checks are Django's cached model permissions.
"""

from __future__ import annotations

from runtime.access.actors import actor_of, cli_actor
from runtime.access.permissions import (
    ADD_RUN,
    CHANGE_RUN,
    CHANGE_SCHEDULE,
    VIEW_RUN,
    can_change,
    can_see,
    check_schedule_change,
    check_start,
    check_version_upgrade,
    run_to_change,
    sees_every_run,
    visible_run,
    visible_runs,
)

__all__ = [
    "ADD_RUN",
    "CHANGE_RUN",
    "CHANGE_SCHEDULE",
    "VIEW_RUN",
    "actor_of",
    "can_change",
    "can_see",
    "check_schedule_change",
    "check_start",
    "check_version_upgrade",
    "cli_actor",
    "run_to_change",
    "sees_every_run",
    "visible_run",
    "visible_runs",
]
