"""Workers freeze the objects they hold at start-up out of the cyclic collector
(runtime.worker.gc_freeze): a step run by a real prefork child, and by a threads worker, reads
its own process's freeze count."""

from __future__ import annotations

import pytest

from runtime import start
from tests.acceptance import worker_gc_flows as flows
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

# Django, Celery and the runtime alone are tens of thousands of objects.
STARTUP_OBJECTS = 10_000


@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_a_worker_runs_its_steps_with_its_start_up_objects_frozen(pool: str) -> None:
    with running_worker(f"gc-{pool}", pool, 1, FANFOLD_WORKFLOW_MODULES=flows.MODULE) as worker:
        seen = start(flows.report).wait(timeout=60, poll_interval=0.05)

    assert seen["frozen"] > STARTUP_OBJECTS
    ran_in_child = seen["pid"] != worker.proc.pid
    assert ran_in_child == (pool == "prefork")


def test_fanfold_gc_freeze_off_leaves_the_collector_alone() -> None:
    with running_worker(
        "gc-off", "prefork", 1, FANFOLD_WORKFLOW_MODULES=flows.MODULE, FANFOLD_GC_FREEZE="0"
    ):
        seen = start(flows.report).wait(timeout=60, poll_interval=0.05)

    assert seen["frozen"] == 0
