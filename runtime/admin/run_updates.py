"""What a run's admin page shows of its updates (contract section 2l): the newest
`UPDATES_SHOWN`, each with its payload, status and reply or reason, and the counts."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from runtime.admin.display import compact_json, timestamp
from runtime.models import Run, RunUpdate, UpdateStatus

UPDATES_SHOWN = 50


def updates_context(run: Run) -> dict[str, Any]:
    """The run page's updates, newest first."""
    updates = RunUpdate.objects.filter(run_id=run.id)
    counts = updates.aggregate(
        total=Count("id"), pending=Count("id", filter=Q(status=UpdateStatus.PENDING))
    )
    newest = updates.order_by("-id")[:UPDATES_SHOWN]
    return {
        "update_total": counts["total"],
        "update_pending": counts["pending"],
        "update_rows": [
            {
                "update": update,
                "payload": compact_json(update.payload),
                "answer": _answer(update),
                "sent": timestamp(update.created_at),
                "answered": timestamp(update.answered_at),
            }
            for update in newest
        ],
    }


def _answer(update: RunUpdate) -> str:
    if update.status == UpdateStatus.REPLIED:
        return compact_json(update.reply)
    return update.reason or ""
