"""The runs changelist: columns, filters, search, and a query count independent of the page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from admin_pages import changelist_url
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from runtime.models import Run, RunStatus, StepStatus
from tests.support.run_rows import add_steps, finished_run, make_run, waiting_run

pytestmark = pytest.mark.django_db


def listed(client: Client, **params: Any) -> list[Run]:
    response = client.get(changelist_url(), params)
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def test_changelist_shows_status_workflow_duration_and_step_counts(staff_client: Client) -> None:
    run = finished_run(step_count=4)
    add_steps(run, 1, status=StepStatus.FAILED, first_position=4)

    response = staff_client.get(changelist_url())

    html = response.content.decode()
    assert str(run.id) in html
    assert "examples.sequential_sum" in html
    assert "completed" in html
    assert "1.488 s" in html  # finished_at - started_at
    assert re.sub(r"<[^>]+>", "", html).count("5 · 4 completed · 1 failed") == 1
    assert "<span class='fanfold-count'>4 completed</span>" in html  # wraps between counts


def test_changelist_query_count_does_not_grow_with_runs(staff_client: Client) -> None:
    finished_run(step_count=2)
    with CaptureQueriesContext(connection) as few:
        staff_client.get(changelist_url())
    for _ in range(20):
        finished_run(step_count=2)
    with CaptureQueriesContext(connection) as many:
        staff_client.get(changelist_url())

    assert len(many) == len(few)


def test_changelist_filters_by_status(staff_client: Client) -> None:
    done = finished_run()
    asleep = waiting_run()

    assert listed(staff_client, status__exact=RunStatus.WAITING) == [asleep]
    assert listed(staff_client, status__exact=RunStatus.COMPLETED) == [done]


def test_changelist_filters_by_workflow(staff_client: Client) -> None:
    finished_run()
    asleep = waiting_run()

    assert listed(staff_client, workflow="examples.nap") == [asleep]


def test_changelist_search_finds_a_run_by_id(staff_client: Client) -> None:
    wanted = finished_run()
    finished_run()

    assert listed(staff_client, q=str(wanted.id)) == [wanted]
    assert listed(staff_client, q=f"  {wanted.id.hex.upper()} ") == [wanted]


def test_changelist_search_finds_a_run_by_idempotency_key(staff_client: Client) -> None:
    wanted = make_run(idempotency_key="order-42")
    make_run(idempotency_key="order-421")

    assert listed(staff_client, q="order-42") == [wanted]


@pytest.mark.parametrize("term", ["not-a-uuid", "1234abcd", "6f1c2a9e-4d3b-4a57-9e0f-2b8d7c5a1e3"])
def test_changelist_search_with_a_term_that_is_no_uuid_matches_nothing(
    staff_client: Client, term: str
) -> None:
    finished_run()

    assert listed(staff_client, q=term) == []


@pytest.mark.parametrize("query", ["q=a%00b", "workflow=orders%00", "status=%00"])
def test_changelist_refuses_a_nul_in_a_filter_or_search(staff_client: Client, query: str) -> None:
    response = staff_client.get(f"{changelist_url()}?{query}")
    assert response.status_code == 400
    assert b"cannot contain NUL" in response.content
