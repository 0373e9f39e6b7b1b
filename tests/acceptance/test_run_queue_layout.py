"""The many-runs layout of docs/deploying.md: executions on a threads worker of their own queue
(FANFOLD_RUN_QUEUE), fan-out branches on a prefork worker of the default queue."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test.utils import override_settings

from runtime import start
from tests.acceptance import fanout_flows as flows
from tests.support.workers import running_worker

pytestmark = [pytest.mark.django_db(transaction=True)]

RUN_QUEUE = "fanfold-test-runs"


def test_run_queue_sends_executions_to_their_worker_and_branches_to_the_others(
    counters_redis: Any,
) -> None:
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_RUN_QUEUE": RUN_QUEUE}
    with (
        override_settings(FANFOLD={**settings.FANFOLD, "RUN_QUEUE": RUN_QUEUE}),
        running_worker("runs", "threads", 8, queue=RUN_QUEUE, TEST_WORKER_ROLE="runs", **env),
        running_worker("branches", "prefork", 2, TEST_WORKER_ROLE="branches", **env),
    ):
        handle = start(flows.roles, 20)
        assert handle.wait(timeout=60) == {"inline": "runs", "branches": ["branches"]}
