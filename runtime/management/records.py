"""What the operator's commands show of runs and steps: JSON records and plain-text lines."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, OutputWrapper

from runtime.django_tasks.run_view import task_run_view
from runtime.models import Run, RunStatus, Step


def run_record(run: Run) -> dict[str, Any]:
    """A run as the `--json` output shows it: a Django task's run by its task's path
    (`name`) and arguments, as the API shows it."""
    task = task_run_view(run.workflow, run.input)
    arguments = task.arguments if task else {"args": run.args, "kwargs": run.kwargs}
    return {
        "id": str(run.id),
        "workflow": run.workflow,
        "name": task.path if task else run.workflow,
        "status": run.status,
        "app_version": run.app_version,
        **arguments,
        "result": run.result,
        "error": _without_traceback(run.error),
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "forked_from": str(run.forked_from_id) if run.forked_from_id else None,
        "forked_from_position": run.forked_from_position,
    }


def step_record(step: Step) -> dict[str, Any]:
    """A step as `fanfold show --json` shows it."""
    return {
        "position": step.position,
        "name": step.name,
        "kind": step.kind,
        "status": step.status,
        "attempt": step.attempt,
        "result": step.result,
        "error": _without_traceback(step.error),
    }


def run_summary(run: Run, forks: list[str]) -> str:
    """A run as people read it: one labelled line per field that has a value."""
    lines = [
        f"run       {run.id}",
        f"workflow  {run.workflow}",
        f"status    {run.status}",
        f"version   {run.app_version or '(none)'}",
        f"input     {json.dumps(run.input, sort_keys=True)}",
        f"created   {when(run.created_at)}",
        f"finished  {when(run.finished_at)}",
    ]
    if run.status == RunStatus.COMPLETED:
        lines.append(f"result    {json.dumps(run.result, sort_keys=True)}")
    if run.error:
        lines.append(f"error     {error_text(run.error)}")
    if run.forked_from_id:
        lines.append(f"forked    from {run.forked_from_id} at {run.forked_from_position}")
    if forks:
        lines.append(f"forks     {', '.join(forks)}")
    return "\n".join(lines) + "\n"


def write_json(stdout: OutputWrapper, value: Any) -> None:
    """`value` as the `--json` output prints it (indented, keys sorted)."""
    stdout.write(json.dumps(value, indent=2, sort_keys=True, default=str))


def json_argument(text: str, what: str) -> Any:
    """A command-line argument decoded as strict JSON; CommandError (code "invalid") if not."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise CommandError(f"invalid: {what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise CommandError(f"invalid: {what} is nested too deeply") from None


def when(moment: Any) -> str:
    """A timestamp in a table cell, to the second; a dash when there is none."""
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "—"


def error_text(error: Any) -> str:
    """A recorded error on one line: `Type: message`."""
    if not error:
        return ""
    if isinstance(error, dict):
        return f"{error.get('type', 'Error')}: {error.get('message', '')}"
    return str(error)


def _without_traceback(error: Any) -> Any:
    error = dict(error) if isinstance(error, dict) else error
    if isinstance(error, dict):
        error.pop("traceback", None)
    return error


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
