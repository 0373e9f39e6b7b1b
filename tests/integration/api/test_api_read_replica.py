"""Reads that may lag, from the test cluster's streaming replica (FANFOLD_READ_DATABASE): the
list served by the replica, read-your-writes for a run just started or changed, the fallback to
the primary when the replica is too far behind or stopped, and the gauges."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from io import StringIO
from typing import Any

import api_flows  # noqa: F401  (registers the workflows)
import psycopg
import pytest
from django.core.management import call_command
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from api.mcp import tools as mcp_tools
from runtime import list_runs
from runtime.models import Run
from runtime.store.replica import ReadReplicaRouter, forget_measurement, replica_state
from tests.support.replica import REPLICA, delayed, stopped, wait_caught_up
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.replica,
    pytest.mark.django_db(transaction=True, databases=["default", "replica"]),
]
METRICS_TOKEN = "replica-metrics-token"


@pytest.fixture(autouse=True)
def reading_from_the_replica(fanfold_settings: Callable[..., None]) -> Callable[..., None]:
    """FANFOLD_READ_DATABASE = "replica", a generous FANFOLD_READ_MAX_LAG (tests set theirs),
    and a measurement made afresh."""
    fanfold_settings(READ_DATABASE="replica", READ_MAX_LAG=3600, METRICS_TOKEN=METRICS_TOKEN)
    forget_measurement()
    return fanfold_settings


def start(client: APIClient, n: int = 1) -> str:
    body = json.dumps({"workflow": "tests.api.double", "args": [n]})
    response = client.post("/api/runs/", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def listed(client: APIClient) -> list[str]:
    forget_measurement()  # measured anew, as a second later
    response = client.get("/api/runs/")
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def run_reads(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if 'FROM "runtime_run"' in q["sql"]]


def replica_sessions_last_query() -> list[str]:
    """The last statement of each session on the replica's test database, as its server
    reports them (pg_stat_activity), not as Django recorded them."""
    name = connections["replica"].settings_dict["NAME"]
    host, port = REPLICA
    with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres") as conn:
        rows = conn.execute(
            "SELECT query FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        ).fetchall()
    return [row[0] for row in rows]


def behind() -> bool:
    forget_measurement()
    state = replica_state()
    return state is not None and state.problem is not None and "behind" in state.problem


def metrics() -> str:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
    assert response.status_code == 200
    return response.content.decode()


def test_read_replica_serves_the_run_list(client: APIClient) -> None:
    run_id = start(client)
    wait_caught_up()
    with (
        CaptureQueriesContext(connections["replica"]) as on_replica,
        CaptureQueriesContext(connections["default"]) as on_primary,
    ):
        assert listed(client) == [run_id]
    assert run_reads(on_replica) and not run_reads(on_primary)
    # The replica's server itself reports the list's last read (the page's search attributes).
    last = replica_sessions_last_query()
    assert any("runtime_searchattribute" in q and run_id.replace("-", "") in q for q in last)
    page = metrics()
    assert "fanfold_read_replica_serving 1.0" in page
    assert "fanfold_read_replica_lag_seconds " in page


def test_read_replica_run_just_started_or_cancelled_is_read_back_at_once(
    client: APIClient,
) -> None:
    with delayed(3):
        run_id = start(client)
        # The list may lag: the replica, 3 s behind, has not replayed the start yet.
        assert run_id not in listed(client)
        detail = client.get(f"/api/runs/{run_id}/")
        assert detail.status_code == 200 and detail.json()["status"] == "pending"
        steps = client.get(f"/api/runs/{run_id}/steps/")
        assert steps.status_code == 200
        assert client.post(f"/api/runs/{run_id}/cancel/").status_code == 200
        assert client.get(f"/api/runs/{run_id}/").json()["status"] == "cancelled"
        events = client.get(f"/api/runs/{run_id}/events/").json()["results"]
        assert events[-1]["type"] == "run_cancelled"


def test_read_replica_admin_list_lags_and_run_page_does_not(
    client: APIClient, admin_client: Client
) -> None:
    with delayed(3):
        run_id = start(client)
        forget_measurement()
        changelist = admin_client.get("/admin/runtime/run/")
        assert changelist.status_code == 200 and run_id not in changelist.content.decode()
        page = admin_client.get(f"/admin/runtime/run/{run_id}/change/")
        assert page.status_code == 200 and run_id in page.content.decode()


def test_read_replica_too_far_behind_is_skipped_and_logged_once(
    client: APIClient,
    reading_from_the_replica: Callable[..., None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    reading_from_the_replica(READ_MAX_LAG=1)
    caplog.set_level(logging.WARNING, logger="fanfold.replica")
    with delayed(3):
        run_id = start(client)
        # The replica stops at the start's commit, 3 s long: it falls 1 s behind meanwhile.
        wait_until(behind, message="the replica to fall behind")
        assert run_id in listed(client)  # from the primary
        assert run_id in listed(client)
        assert "fanfold_read_replica_serving 0.0" in metrics()
    assert run_id in listed(client)  # the replica again, caught up
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "skipped" in m and "behind" in m]) == 1, messages
    assert len([m for m in messages if "serves reads again" in m]) == 1, messages


def test_read_replica_stopped_is_skipped_for_the_primary(
    client: APIClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="fanfold.replica")
    with stopped():
        run_id = start(client)
        with CaptureQueriesContext(connections["default"]) as on_primary:
            assert listed(client) == [run_id]
        assert run_reads(on_primary)
        assert "fanfold_read_replica_serving 0.0" in metrics()
    assert any("unreachable" in r.getMessage() for r in caplog.records)


def test_read_replica_router_writes_rows_read_from_the_replica_to_the_primary(
    client: APIClient,
) -> None:
    run_id = uuid.UUID(start(client))
    wait_caught_up()
    copy = Run.objects.using("replica").get(id=run_id)
    router: Any = ReadReplicaRouter()
    assert router.db_for_write(Run, instance=copy) == "default"
    assert router.allow_migrate("replica", "runtime") is False
    assert router.db_for_read(Run) is None  # outside lagging_reads(): Django's default


def test_read_replica_serves_the_cli_list_runs_and_mcp_lists(client: APIClient, user: Any) -> None:
    with delayed(3):
        run_id = start(client)
        forget_measurement()
        out = StringIO()
        call_command("fanfold", "runs", "--json", stdout=out)
        assert run_id not in out.getvalue()  # the replica's list, 3 s behind
        assert uuid.UUID(run_id) not in [handle.id for handle in list_runs()]
        assert run_id not in [row["id"] for row in mcp_tools.list_runs(user)["runs"]]
        # One run, by id: read as the client left it.
        assert mcp_tools.get_run(user, run_id)["id"] == run_id
        assert mcp_tools.run_history(user, run_id)["events"][0]["type"] == "run_created"
