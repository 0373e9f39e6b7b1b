"""Routes of the REST API, mounted at /api/."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path, re_path
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)

from api.error_envelope import endpoint_not_found
from api.views.approvals import RunApprovalsView, RunApprovalView
from api.views.callbacks import CallbackTokenView, CallbackView
from api.views.docs import DocsView, SchemaView
from api.views.forks import RunForkView, RunRetryView
from api.views.mcp import McpView
from api.views.messages import RunMessagesView, RunValueView, SignalsView
from api.views.runs import (
    RunCancelView,
    RunDetailView,
    RunEventsView,
    RunListView,
    RunStepsView,
)
from api.views.schedules import ScheduleListView, SchedulePauseView, ScheduleResumeView
from api.views.streams import RunStreamView
from api.views.updates import RunUpdatesView, RunUpdateView, UpdateWithStartView
from api.views.versions import VersionListView, VersionUpgradeView
from api.views.workflows import WorkflowListView

# JSON first: the API is all JSON; ?format=yaml still gives YAML.
_SCHEMA_RENDERERS = [
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
]

urlpatterns: list[URLPattern | URLResolver] = [
    path("runs/", RunListView.as_view(), name="run-list"),
    path("runs/<str:run_id>/", RunDetailView.as_view(), name="run-detail"),
    path("runs/<str:run_id>/steps/", RunStepsView.as_view(), name="run-steps"),
    path("runs/<str:run_id>/events/", RunEventsView.as_view(), name="run-events"),
    path("runs/<str:run_id>/cancel/", RunCancelView.as_view(), name="run-cancel"),
    path("runs/<str:run_id>/fork/", RunForkView.as_view(), name="run-fork"),
    path("runs/<str:run_id>/retry/", RunRetryView.as_view(), name="run-retry"),
    path("runs/<str:run_id>/approvals/", RunApprovalsView.as_view(), name="run-approvals"),
    path(
        "runs/<str:run_id>/approvals/<str:approval_id>/",
        RunApprovalView.as_view(),
        name="run-approval",
    ),
    path("runs/<str:run_id>/streams/<str:name>/", RunStreamView.as_view(), name="run-stream"),
    path("callbacks/", CallbackTokenView.as_view(), name="callback-token"),
    path("runs/<str:run_id>/messages/", RunMessagesView.as_view(), name="run-messages"),
    path("runs/<str:run_id>/values/<str:key>/", RunValueView.as_view(), name="run-value"),
    path("signals/", SignalsView.as_view(), name="signals"),
    path("runs/<str:run_id>/updates/", RunUpdatesView.as_view(), name="run-updates"),
    path(
        "runs/<str:run_id>/updates/<str:update_id>/",
        RunUpdateView.as_view(),
        name="run-update",
    ),
    path("updates/", UpdateWithStartView.as_view(), name="updates-with-start"),
    path("callbacks/<str:token>/", CallbackView.as_view(), name="callback"),
    path("workflows/", WorkflowListView.as_view(), name="workflow-list"),
    path("versions/", VersionListView.as_view(), name="version-list"),
    path("versions/<str:version>/upgrade/", VersionUpgradeView.as_view(), name="version-upgrade"),
    path("mcp/", McpView.as_view(), name="mcp"),
    path("schedules/", ScheduleListView.as_view(), name="schedule-list"),
    path("schedules/<str:workflow>/pause/", SchedulePauseView.as_view(), name="schedule-pause"),
    path("schedules/<str:workflow>/resume/", ScheduleResumeView.as_view(), name="schedule-resume"),
    path("schema/", SchemaView.as_view(renderer_classes=_SCHEMA_RENDERERS), name="api-schema"),
    path("docs/", DocsView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^(?P<path>.*)$", endpoint_not_found),
]
