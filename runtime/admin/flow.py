"""Admin pages of flow control: schedules (pause, resume) and concurrency slots in use."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet
from django.db.models.functions import Coalesce
from django.http import HttpRequest

from runtime.access import CHANGE_SCHEDULE
from runtime.admin.base import ReadOnlyAdmin, count_subquery
from runtime.models import ACTIVE_RUN_STATES, ConcurrencySlot, Run, RunStatus, Schedule
from runtime.schedules import pause_schedule, resume_schedule


@admin.register(Schedule)
class ScheduleAdmin(ReadOnlyAdmin[Schedule]):
    list_display = ["workflow", "kind", "expression", "timezone", "catchup", "paused",
                    "last_tick", "next_tick"]  # fmt: skip
    list_filter = ["paused", "kind"]
    search_fields = ["workflow"]
    actions = ["pause", "resume"]

    def has_pause_permission(self, request: HttpRequest) -> bool:
        """Pausing and resuming need runtime.change_schedule (the actions' "pause" right)."""
        return bool(request.user.is_active and request.user.has_perm(CHANGE_SCHEDULE))

    @admin.action(description="Pause the selected schedules", permissions=["pause"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            pause_schedule(row.workflow)
        messages.success(request, f"Paused {queryset.count()} schedule(s).")

    @admin.action(description="Resume the selected schedules (from now)", permissions=["pause"])
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            resume_schedule(row.workflow)
        messages.success(request, f"Resumed {queryset.count()} schedule(s).")


def _runs_of_slot(**filters: object) -> Coalesce:
    runs = Run.objects.filter(
        workflow=OuterRef("workflow"), concurrency_key=OuterRef("key"), **filters
    )
    return count_subquery(runs, "workflow")


@admin.register(ConcurrencySlot)
class ConcurrencySlotAdmin(ReadOnlyAdmin[ConcurrencySlot]):
    list_display = ["workflow", "key", "capacity", "in_use", "waiting", "updated_at"]
    search_fields = ["workflow", "key"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConcurrencySlot]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                in_use_count=_runs_of_slot(admitted=True, status__in=ACTIVE_RUN_STATES),
                waiting_count=_runs_of_slot(admitted=False, status=RunStatus.PENDING),
            )
        )

    @admin.display(description="slots in use", ordering="in_use_count")
    def in_use(self, slot: ConcurrencySlot) -> int:
        return int(getattr(slot, "in_use_count", 0))

    @admin.display(description="runs waiting", ordering="waiting_count")
    def waiting(self, slot: ConcurrencySlot) -> int:
        return int(getattr(slot, "waiting_count", 0))
