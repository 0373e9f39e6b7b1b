"""Cancel and re-run, from the changelist and from a run's page."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from admin_pages import change_url, changelist_url
from django.contrib.messages import get_messages
from django.http import HttpResponse
from django.test import Client

from runtime.models import EventType, Run, RunStatus, StepStatus
from runtime.testing import InMemoryDispatcher, use_dispatcher
from tests.support.run_rows import finished_run, make_run, waiting_run


def run_action(client: Client, action: str, *runs: Run, **extra: Any) -> HttpResponse:
    data = {"action": action, "_selected_action": [str(r.pk) for r in runs], **extra}
    return client.post(changelist_url(), data, follow=True)


def messages_of(response: HttpResponse) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


@pytest.mark.django_db(transaction=True)  # the checkpoint writer thread commits the cancel
def test_cancel_action_cancels_a_waiting_run(staff_client: Client) -> None:
    run = waiting_run()

    response = run_action(staff_client, "cancel_runs", run, index=0)

    assert messages_of(response) == [("success", "Cancelled 1 run.")]
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert run.wake_at is None
    sleep = run.step_set.get(kind="sleep")
    assert sleep.status == StepStatus.CANCELLED
    assert run.event_set.order_by("seq").last().type == EventType.RUN_CANCELLED  # type: ignore[union-attr]


@pytest.mark.django_db(transaction=True)
def test_cancel_action_warns_about_a_finished_run(staff_client: Client) -> None:
    done = finished_run()
    asleep = waiting_run()

    response = run_action(staff_client, "cancel_runs", done, asleep, index=0)

    assert response.status_code == 200
    assert messages_of(response) == [
        ("success", "Cancelled 1 run."),
        ("warning", f"1 run had already finished and stayed as they were: {done.id}"),
    ]
    done.refresh_from_db()
    assert done.status == RunStatus.COMPLETED


@pytest.mark.django_db(transaction=True)
def test_cancel_button_on_the_run_page(staff_client: Client) -> None:
    run = waiting_run()
    page = staff_client.get(change_url(run)).content.decode()
    assert 'value="cancel_runs"' in page

    run_action(staff_client, "cancel_runs", run)  # what the button posts: no "index"

    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert 'value="cancel_runs"' not in staff_client.get(change_url(run)).content.decode()


@pytest.fixture
def enqueued() -> Iterator[InMemoryDispatcher]:
    with use_dispatcher(InMemoryDispatcher()) as dispatcher:
        assert isinstance(dispatcher, InMemoryDispatcher)
        yield dispatcher


@pytest.mark.django_db
def test_rerun_action_starts_a_new_run_with_the_same_input(
    staff_client: Client,
    enqueued: InMemoryDispatcher,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    old = finished_run(step_count=3, idempotency_key="nightly-1")

    with django_capture_on_commit_callbacks(execute=True):
        response = run_action(staff_client, "rerun_runs", old, index=0)

    new = Run.objects.exclude(pk=old.pk).get()
    assert (new.workflow, new.input) == (old.workflow, old.input)
    assert new.idempotency_key is None
    assert new.status == RunStatus.PENDING
    assert [sent.run_id for sent in enqueued.runs] == [new.id]
    [(level, text)] = messages_of(response)
    assert level == "success"
    assert f"<a href='{change_url(new)}'>{new.id}</a> (from {old.id})" in text


@pytest.mark.django_db
def test_rerun_action_reports_a_workflow_that_is_gone(
    staff_client: Client, enqueued: InMemoryDispatcher
) -> None:
    old = make_run(workflow="examples.removed_long_ago")

    response = run_action(staff_client, "rerun_runs", old, index=0)

    [(level, text)] = messages_of(response)
    assert level == "error"
    assert text.startswith(f"Could not re-run {old.id}:")
    assert Run.objects.count() == 1
    assert enqueued.runs == []
