"""URLs of the run admin's pages (imported by the admin tests)."""

from __future__ import annotations

from django.urls import reverse

from runtime.models import Run


def changelist_url() -> str:
    return reverse("admin:runtime_run_changelist")


def change_url(run: Run) -> str:
    return reverse("admin:runtime_run_change", args=[run.pk])
