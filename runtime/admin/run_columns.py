"""The run list's columns (and the name a run goes by), a mixin of runtime.admin.runs.RunAdmin."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from runtime.admin.display import breakable_name, seconds_between, timestamp
from runtime.django_tasks.run_view import task_run_view
from runtime.models import Run


class RunListColumns:
    """How the run list shows a run: its id's end, its name, its times and its step counts."""

    @admin.display(description="Run", ordering="id")
    def short_id(self, run: Run) -> SafeString:
        # The id's end: its start is its creation time (runtime.core.run_ids), the same for
        # every run of a minute.
        return format_html("<code title='{}'>…{}</code>", run.id, str(run.id)[-8:])

    @admin.display(description="Workflow", ordering="workflow")
    def workflow_name(self, run: Run) -> SafeString:
        return breakable_name(self.name(run))

    @admin.display(description="Created", ordering="created_at")
    def created(self, run: Run) -> str:
        return timestamp(run.created_at)

    @admin.display(description="Duration")
    def duration(self, run: Run) -> str:
        return seconds_between(run.started_at or run.created_at, run.finished_at)

    @admin.display(description="Steps")
    def step_counts(self, run: Run) -> str:
        total = getattr(run, "steps_total", None)
        if total is None:
            return "—"
        parts = [str(total)]
        if run.steps_completed:  # type: ignore[attr-defined]
            parts.append(f"{run.steps_completed} completed")  # type: ignore[attr-defined]
        if run.steps_failed:  # type: ignore[attr-defined]
            parts.append(f"{run.steps_failed} failed")  # type: ignore[attr-defined]
        # A narrow list wraps the cell between the counts, never inside one.
        count = "<span class='fanfold-count'>{}</span>"
        return format_html_join(" · ", count, ([part] for part in parts))

    @admin.display(description="Workflow", ordering="workflow")
    def name(self, run: Run) -> str:
        """The workflow's name; a Django task's path (its runs share one workflow)."""
        task = task_run_view(run.workflow, run.input)
        return f"{task.path} (task)" if task else run.workflow
