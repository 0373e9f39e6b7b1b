"""`python manage.py demo`: the example workflows end to end, narrated."""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from runtime import embedded
from runtime.handles import RunHandle, start
from runtime.models import Step, StepStatus

DEMOS: list[tuple[str, list[Any], str, int]] = [
    ("examples.sequential_sum", [200], "a sequential loop of 200 durable steps", 200),
    ("examples.flaky", ["sku-42", 2], "a step that fails twice, then succeeds", 1),
    ("examples.nap", [1.0], "a durable sleep of one second between two steps", 3),
    ("examples.sum_of_squares", [20], "a fan-out of 20 branches, 8 at a time, then a step", 21),
]


class Command(BaseCommand):
    help = "Run the example workflows end to end and print what happened."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--timeout", type=float, default=120.0)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0)
        where = "the embedded worker" if embedded.is_embedded() else "your Celery workers"
        self.stdout.write(self.style.MIGRATE_HEADING(f"Fanfold demo, served by {where}\n"))
        for workflow, wf_args, story, expected_steps in DEMOS:
            self.stdout.write(self.style.MIGRATE_LABEL(f"{workflow}: {story}"))
            handle = start(workflow, *wf_args)
            result = self._wait_with_progress(handle, expected_steps, options["timeout"])
            self._report(handle, result)
        self._agent_demo(options["timeout"])
        self.stdout.write(self.style.SUCCESS("All demo runs completed.\n"))
        self.stdout.write(NEXT_STEPS)
        embedded.stop_worker()

    def _agent_demo(self, timeout: float) -> None:
        """A durable agent whose refund waits for an approval, which the demo gives."""
        try:
            from examples.agent_demo import approve_when_asked
        except ImportError:  # pydantic-ai is not installed: pip install fanfold[agents]
            self.stdout.write("examples.support_agent: skipped (pip install fanfold[agents])\n")
            return
        story = "a durable agent; its refund tool waits for a person's approval"
        self.stdout.write(self.style.MIGRATE_LABEL(f"examples.support_agent: {story}"))
        handle = start("examples.support_agent", "My order 1042 arrived damaged.")
        approved = approve_when_asked(handle.id, timeout)
        self.stdout.write(f"  asked to approve {approved}; the demo approved it")
        self._report(handle, handle.wait(timeout=timeout))

    def _wait_with_progress(self, handle: RunHandle, expected: int, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        interactive = sys.stdout.isatty()
        while True:
            done = Step.objects.filter(run_id=handle.id, status=StepStatus.COMPLETED).count()
            status = handle.status
            bar = _bar(done, expected)
            if interactive:
                self.stdout.write(f"\r  {bar} {done}/{expected} steps ({status})   ", ending="")
                self.stdout.flush()
            if status in ("completed", "failed", "cancelled"):
                if interactive:
                    self.stdout.write("")
                else:
                    self.stdout.write(f"  {bar} {done}/{expected} steps ({status})")
                return handle.wait(timeout=1)
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {handle.id} did not finish in {timeout} s")
            time.sleep(0.05)

    def _report(self, handle: RunHandle, result: Any) -> None:
        run = handle.refresh()
        total = (run.finished_at - run.created_at).total_seconds() if run.finished_at else 0.0
        self.stdout.write(f"  run {run.id}: {run.status} in {total:.3f} s, result {result!r}")
        steps = handle.steps()
        elided = len(steps) > 6
        shown = steps[:3] + steps[-2:] if elided else steps
        for index, st in enumerate(shown):
            took = (
                f"{st.duration_seconds * 1000:.1f} ms" if st.duration_seconds is not None else "-"
            )
            self.stdout.write(
                f"    #{st.position:<4} {st.name:<24} {st.kind:<6} {st.status:<9} "
                f"attempt {st.attempt}  {took}"
            )
            if elided and index == 2:
                self.stdout.write(f"    ... {len(steps) - 5} more steps ...")
        retries = [e for e in handle.events() if e.type == "step_retrying"]
        for event in retries:
            self.stdout.write(
                f"    retry after attempt {event.payload['attempt']}: "
                f"{event.payload['error']['message']} (waited {event.payload['delay']:.2f} s, "
                "no worker held)"
            )
        self.stdout.write(f"    {len(handle.events())} events in the log\n")


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = width if total <= 0 else min(width, int(width * done / total))
    return "[" + "#" * filled + "." * (width - filled) + "]"


NEXT_STEPS = """\
Next:
  Workers:  export DATABASE_URL=postgres://postgres@127.0.0.1:5432/fanfold
            export CELERY_BROKER_URL=redis://127.0.0.1:6379/0
            .venv/bin/python manage.py migrate
            .venv/bin/celery -A config worker -l INFO
  API:      .venv/bin/python manage.py runserver, then POST /api/runs/ (docs at /api/docs/)
  Admin:    .venv/bin/python manage.py createsuperuser, then open http://127.0.0.1:8000/admin/
  One run:  .venv/bin/python manage.py startrun examples.sequential_sum --args '[10]' --wait
"""
