"""URL routes: the admin, the REST API and the Prometheus metrics."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from runtime.observe.web import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("metrics", metrics_view, name="fanfold-metrics"),
]
