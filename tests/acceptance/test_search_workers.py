"""Search attributes on a real worker process: its housekeeping sweep drains the pending list
(runtime.store.runs.search_pending); nothing else in the run's execution does."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import start
from runtime.models import SearchAttribute, SearchPending
from tests.acceptance import search_flows as flows
from tests.support.waiting import wait_until
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)


def test_search_workers_a_workers_sweep_indexes_the_started_runs_attributes(
    counters_redis: Any,
) -> None:
    started = {start(flows.order, search={"customer": n, "region": "eu"}).id: n for n in range(5)}
    assert set(SearchPending.objects.values_list("run_id", flat=True)) == set(started)
    assert not SearchAttribute.objects.exists()
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_SWEEP_INTERVAL": "0.2"}
    with running_worker("search-drain", "threads", 2, **env):
        wait_until(lambda: not SearchPending.objects.exists(), 60, message="the list drained")
    customers = SearchAttribute.objects.filter(name="customer").values_list("run_id", "num")
    assert {run_id: num for run_id, num in customers} == started
    assert SearchAttribute.objects.filter(name="region", text="eu").count() == len(started)
