"""Admin pages of flow control: schedules (pause, resume) and concurrency slots in use.

Imported by runtime.admin, which Django's admin autodiscovery loads.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest

from runtime.models import ACTIVE_RUN_STATES, ConcurrencySlot, Run, RunStatus, Schedule
from runtime.schedules import pause_schedule, resume_schedule


class _ReadOnly(admin.ModelAdmin):
    """Staff may look (and pause or resume), as on the runs pages; nobody edits rows."""

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Schedule)
class ScheduleAdmin(_ReadOnly):
    list_display = ["workflow", "kind", "expression", "timezone", "catchup", "paused",
                    "last_tick", "next_tick"]  # fmt: skip
    list_filter = ["paused", "kind"]
    search_fields = ["workflow"]
    actions = ["pause", "resume"]

    @admin.action(description="Pause the selected schedules")
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            pause_schedule(row.workflow)
        messages.success(request, f"Paused {queryset.count()} schedule(s).")

    @admin.action(description="Resume the selected schedules (from now)")
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            resume_schedule(row.workflow)
        messages.success(request, f"Resumed {queryset.count()} schedule(s).")


def _runs_of_slot(**filters: object) -> Coalesce:
    runs = Run.objects.filter(
        workflow=OuterRef("workflow"), concurrency_key=OuterRef("key"), **filters
    )
    counted = runs.order_by().values("workflow").annotate(n=Count("id")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


@admin.register(ConcurrencySlot)
class ConcurrencySlotAdmin(_ReadOnly):
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
