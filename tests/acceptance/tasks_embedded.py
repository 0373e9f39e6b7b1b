"""Run as a script by test_tasks_embedded.py: Django tasks on the embedded default (a fresh
SQLite database under FANFOLD_VAR_DIR, the in-process Celery worker), each result printed as
JSON with every TaskResult field, as `get_result` returns it after the task finished."""

from __future__ import annotations

import json
import os
import sys
from contextlib import suppress
from datetime import timedelta
from pathlib import Path
from typing import Any


def fields(result: Any) -> dict[str, Any]:
    """Every TaskResult field of `result`, as JSON."""

    def iso(moment: Any) -> str | None:
        return None if moment is None else moment.isoformat()

    finished = str(result.status) == "SUCCESSFUL"
    return {
        "id": result.id,
        "status": str(result.status),
        "return_value": result.return_value if finished else None,
        "errors": [[e.exception_class_path, e.traceback] for e in result.errors],
        "enqueued_at": iso(result.enqueued_at),
        "started_at": iso(result.started_at),
        "last_attempted_at": iso(result.last_attempted_at),
        "finished_at": iso(result.finished_at),
        "worker_ids": list(result.worker_ids),
        "attempts": result.attempts,
        "args": result.args,
        "kwargs": result.kwargs,
        "backend": result.backend,
        "task": {
            "path": result.task.module_path,
            "priority": result.task.priority,
            "queue_name": result.task.queue_name,
            "run_after": iso(result.task.run_after),
        },
    }


def main() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.utils import timezone

    from runtime import RunFailed, embedded, get_run
    from runtime.django_tasks.compat import default_task_backend
    from tests.support import sample_tasks

    if not embedded.is_embedded():
        raise SystemExit("not on the embedded default: unset CELERY_BROKER_URL")
    try:
        deferred = sample_tasks.add.using(
            priority=60, run_after=timezone.now() + timedelta(seconds=1)
        )
        enqueued = {
            "flaky": sample_tasks.flaky.enqueue(1),
            "deferred": deferred.enqueue(2, b=3),
            "fails": sample_tasks.always_fails.enqueue(),
        }
        results = {}
        for name, result in enqueued.items():
            with suppress(RunFailed):  # a failed task's run raises: its result says how
                get_run(result.id).wait(timeout=60)
            results[name] = fields(default_task_backend.get_result(result.id))
        results["pid"] = os.getpid()
        print(json.dumps(results))
    finally:
        embedded.stop_worker()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main()
