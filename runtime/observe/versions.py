"""What each deployment version has in flight, who serves it, and which runs are stranded.

A version's row (`fanfold versions`, `GET /api/versions/`, the admin's versions page):
`{"version", "current", "pending", "running", "waiting", "stranded", "workers"}`. Its runs
are stranded when it has runs in flight and no worker has served it for
FANFOLD_VERSION_STRANDED_AFTER: nothing runs them until a worker of that version comes back,
or they are upgraded or retired. The metric `fanfold_runs_stranded{version}` counts them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from runtime import conf
from runtime.core.versions import UNPINNED
from runtime.models.versions import active_counts_by_version, last_served, served_by
from runtime.registry import versions


def is_stranded(version: str, seen: dict[str, datetime], now: datetime) -> bool:
    """Whether no live worker has served `version` within VERSION_STRANDED_AFTER (runs older
    than versions are anyone's: stranded only when no worker at all was seen)."""
    since = now - timedelta(seconds=conf.get().VERSION_STRANDED_AFTER)
    if version == UNPINNED:
        return not any(at >= since for at in seen.values())
    at = seen.get(version)
    return at is None or at < since


def version_rows(now: datetime | None = None) -> list[dict[str, Any]]:
    """Every version with runs in flight, served lately or current, as `fanfold versions`
    lists them: current first, then by name."""
    now = now or timezone.now()
    counts = active_counts_by_version()
    seen = last_served()
    since = now - timedelta(seconds=conf.get().VERSION_STRANDED_AFTER)
    workers = served_by(since)
    current = versions.current()
    names = set(counts) | set(workers) | {current}
    rows = []
    for name in sorted(names, key=lambda v: (v != current, v)):
        states = counts.get(name, {})
        in_flight = sum(states.values())
        rows.append(
            {
                "version": name,
                "current": name == current,
                "pending": states.get("pending", 0),
                "running": states.get("running", 0),
                "waiting": states.get("waiting", 0),
                "stranded": in_flight if in_flight and is_stranded(name, seen, now) else 0,
                "workers": [worker for worker, _ in workers.get(name, [])],
            }
        )
    return rows
