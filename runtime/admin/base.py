"""What the Fanfold admins share: nobody edits a row by hand; staff status only opens the door.

The runs, schedules and concurrency-slot admins derive from `ReadOnlyAdmin`; what they do
(cancel, re-run, retry, fork, pause, resume) goes through the runtime's services, not a form,
and is allowed by runtime.access's rules (Django's model permissions, a run's owner).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.contrib import admin
from django.db.models import Count, IntegerField, Model, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.template.response import SimpleTemplateResponse

_M = TypeVar("_M", bound=Model)

# ModelAdmin is generic for the type checker only (no django_stubs_ext monkeypatch at run time).
if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin as _ModelAdmin
else:

    class _ModelAdmin(admin.ModelAdmin, Generic[_M]):
        pass


class ReadOnlyAdmin(_ModelAdmin[_M]):
    """Staff with the model's view (or change) permission may look; nobody adds, edits or
    deletes. Staff status alone opens the admin's door and nothing more."""

    def has_view_permission(self, request: HttpRequest, obj: _M | None = None) -> bool:
        user = request.user
        return bool(user.is_active and user.is_staff and super().has_view_permission(request, obj))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: _M | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: _M | None = None) -> bool:
        return False


def count_subquery(rows: QuerySet[Any], correlated: str) -> Coalesce:
    """How many `rows` there are, as an integer expression to annotate a list's rows with.

    `rows` is filtered on the outer row with `OuterRef`, and `correlated` names the field it
    is filtered by, so the subquery yields one count; it is evaluated only for the rows of the
    page shown, where a join would aggregate the whole table. No rows count as 0.
    """
    counted = rows.order_by().values(correlated).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def rendered(response: HttpResponse) -> HttpResponse:
    """`response` with its template rendered now: a TemplateResponse renders after the view
    returns, and the queries its template runs would leave a `lagging_reads()` block."""
    if isinstance(response, SimpleTemplateResponse) and not response.is_rendered:
        response.render()
    return response
