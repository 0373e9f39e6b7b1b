"""Fork and retry in the admin: per-step fork buttons, retry on the run page, bulk retry."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from admin_pages import change_url, changelist_url
from django.contrib.messages import get_messages
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from runtime.models import Run, RunStatus, StepStatus
from runtime.testing import InMemoryDispatcher, use_dispatcher
from tests.support.run_rows import add_steps, make_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def dispatcher() -> Iterator[InMemoryDispatcher]:
    with use_dispatcher(InMemoryDispatcher()) as sent:
        assert isinstance(sent, InMemoryDispatcher)
        yield sent


def failed_run() -> Run:
    """A failed run of examples.sequential_sum: positions 1-2 completed, 3 failed."""
    run = make_run("examples.sequential_sum", RunStatus.FAILED)
    add_steps(run, 2, first_position=1)
    add_steps(run, 1, first_position=3, status=StepStatus.FAILED, error={"type": "Boom"})
    return run


def messages_of(response: HttpResponse) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def fork_url(run: Run) -> str:
    return reverse("admin:runtime_run_fork", args=[run.pk])


def test_admin_run_page_offers_fork_per_step_and_retry(staff_client: Client) -> None:
    run = failed_run()
    page = staff_client.get(change_url(run)).content.decode()
    assert page.count("Fork from this step") == 3
    assert "Retry from the failed step" in page
    assert fork_url(run) in page
    completed = make_run()
    add_steps(completed, 1, first_position=1)
    assert (
        "Retry from the failed step" not in staff_client.get(change_url(completed)).content.decode()
    )


def test_admin_fork_from_a_step_opens_the_new_run_linked_to_its_source(
    staff_client: Client, dispatcher: InMemoryDispatcher
) -> None:
    run = failed_run()
    response = staff_client.post(fork_url(run), {"position": "2"}, follow=True)
    new = Run.objects.get(forked_from=run)
    assert new.forked_from_position == 2
    assert response.redirect_chain[-1][0] == change_url(new)
    assert messages_of(response)[0][0] == "success"
    assert [r.run_id for r in dispatcher.runs] == [new.id]
    assert "Forked from" in response.content.decode()
    assert str(new.id) in staff_client.get(change_url(run)).content.decode()  # and back


def test_admin_fork_refuses_bad_positions_and_gets(staff_client: Client) -> None:
    run = failed_run()
    for position in ("9", "x", ""):
        response = staff_client.post(fork_url(run), {"position": position}, follow=True)
        assert messages_of(response)[0][0] == "error"
    assert staff_client.get(fork_url(run)).status_code == 405
    assert Run.objects.count() == 1


def test_admin_bulk_retry_forks_each_failed_run_from_its_failed_step(
    staff_client: Client,
) -> None:
    failed = [failed_run(), failed_run()]
    completed = make_run()
    data = {
        "action": "retry_runs",
        "_selected_action": [str(r.pk) for r in [*failed, completed]],
        "index": 0,
    }
    response = staff_client.post(changelist_url(), data, follow=True)
    forks = Run.objects.filter(forked_from__isnull=False)
    assert sorted(str(f.forked_from_id) for f in forks) == sorted(str(r.pk) for r in failed)
    assert {f.forked_from_position for f in forks} == {3}
    levels = [level for level, _ in messages_of(response)]
    assert levels == ["success", "warning"]
    assert str(completed.pk) in messages_of(response)[1][1]
