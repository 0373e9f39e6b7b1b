"""Attacks through the admin: staff status with no model permission grants nothing.

A staff user without permissions ("plain staff") passes the admin's door and sees the runs
they own, and no others: another user's run is not listed and its page, fork form, actions,
schedules and workflow page do nothing for them.
"""

from __future__ import annotations

import pytest
from admin_pages import change_url, changelist_url
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runtime import conf
from runtime.core.callbacks import derive_token, token_digest
from runtime.models import Run, RunStatus, Schedule, Step, StepKind, StepStatus
from tests.support.run_rows import add_steps, finished_run, waiting_run
from tests.support.users import grant, operator

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice")


@pytest.fixture
def plain_staff(client: Client) -> Client:
    client.force_login(User.objects.create_user("mallory", is_staff=True))
    return client


def test_admin_security_plain_staff_sees_no_other_users_runs(
    plain_staff: Client, alice: User
) -> None:
    run = finished_run(owner=alice)
    listing = plain_staff.get(changelist_url())
    assert listing.status_code == 200
    assert str(run.pk)[-8:] not in listing.content.decode()
    page = plain_staff.get(change_url(run))
    assert page.status_code == 302  # Django's "no such object" redirect
    followed = plain_staff.get(change_url(run), follow=True).content.decode()
    assert "doesn\u2019t exist" in followed  # the answer for a run that does not exist
    workflow = reverse("admin:runtime_run_workflow", args=["examples.sequential_sum"])
    assert plain_staff.get(workflow).status_code == 403


def test_admin_security_plain_staff_cannot_fork_or_cancel_anothers_run(
    plain_staff: Client, alice: User
) -> None:
    done = finished_run(owner=alice)
    asleep = waiting_run(owner=alice)
    fork = plain_staff.post(reverse("admin:runtime_run_fork", args=[done.pk]), {"position": 1})
    assert fork.status_code == 404
    data = {"action": "cancel_runs", "_selected_action": [str(asleep.pk)], "index": 0}
    plain_staff.post(changelist_url(), data, follow=True)
    retry = {"action": "retry_runs", "_selected_action": [str(done.pk)], "index": 0}
    plain_staff.post(changelist_url(), retry, follow=True)
    assert Run.objects.get(pk=asleep.pk).status == RunStatus.WAITING
    assert Run.objects.count() == 2


def test_admin_security_plain_staff_cannot_list_or_pause_schedules(plain_staff: Client) -> None:
    now = timezone.now()
    row = Schedule.objects.create(
        workflow="tests.admin.nightly", kind="cron", expression="0 3 * * *",
        created_at=now, updated_at=now, next_tick=now,
    )  # fmt: skip
    url = reverse("admin:runtime_schedule_changelist")
    assert plain_staff.get(url).status_code == 403
    data = {"action": "pause", "_selected_action": [str(row.pk)], "index": 0}
    assert plain_staff.post(url, data).status_code == 403
    row.refresh_from_db()
    assert row.paused is False


def test_admin_security_viewers_may_look_but_not_pause(client: Client) -> None:
    viewer = grant(User.objects.create_user("viewer", is_staff=True), "view_schedule")
    client.force_login(viewer)
    now = timezone.now()
    row = Schedule.objects.create(
        workflow="tests.admin.nightly", kind="cron", expression="0 3 * * *",
        created_at=now, updated_at=now, next_tick=now,
    )  # fmt: skip
    url = reverse("admin:runtime_schedule_changelist")
    page = client.get(url)
    assert page.status_code == 200 and b"tests.admin.nightly" in page.content
    assert b'value="pause"' not in page.content
    client.post(url, {"action": "pause", "_selected_action": [str(row.pk)], "index": 0})
    row.refresh_from_db()
    assert row.paused is False


def test_admin_security_staff_owner_sees_and_cancels_own_runs(client: Client) -> None:
    owner = User.objects.create_user("olga", is_staff=True)
    client.force_login(owner)
    mine = waiting_run(owner=owner)
    theirs = finished_run(owner=User.objects.create_user("other"))
    listing = client.get(changelist_url()).content.decode()
    assert str(mine.pk)[-8:] in listing and str(theirs.pk)[-8:] not in listing
    assert client.get(change_url(mine)).status_code == 200
    data = {"action": "cancel_runs", "_selected_action": [str(mine.pk)], "index": 0}
    client.post(changelist_url(), data, follow=True)
    assert Run.objects.get(pk=mine.pk).status == RunStatus.CANCELLED
    cancelled = mine.event_set.get(type="run_cancelled")
    assert cancelled.payload["by"]["username"] == "olga"


def test_admin_security_callback_token_shown_to_the_owner_only(client: Client) -> None:
    owner = User.objects.create_user("olga", is_staff=True)
    run = waiting_run(owner=owner)
    (callback,) = add_steps(
        run, 1, name="approval", kind=StepKind.CALLBACK, status=StepStatus.RUNNING,
        first_position=5,
    )  # fmt: skip
    token = derive_token(conf.token_secrets()[0], callback.run_id, callback.id)
    Step.objects.filter(id=callback.id).update(callback_token=token_digest(token))
    client.force_login(owner)
    assert token in client.get(change_url(run)).content.decode()
    client.force_login(User.objects.create_user("mallory", is_staff=True))
    assert token not in client.get(change_url(run), follow=True).content.decode()


def test_admin_security_run_page_offers_only_the_actions_the_user_may_take(
    client: Client, alice: User
) -> None:
    asleep = waiting_run(owner=alice)
    failed = finished_run(owner=alice)
    Run.objects.filter(pk=failed.pk).update(status=RunStatus.FAILED)
    Step.objects.filter(run=failed, position=2).update(status=StepStatus.FAILED)
    buttons = ("Cancel run", "Retry from the failed step", "Fork from this step", "Re-run")

    client.force_login(grant(User.objects.create_user("viewer", is_staff=True), "view_run"))
    for run in (asleep, failed):
        page = client.get(change_url(run))
        assert page.status_code == 200
        assert not any(label in page.content.decode() for label in buttons)

    client.force_login(operator("olga", is_staff=True))
    on_asleep = client.get(change_url(asleep)).content.decode()
    on_failed = client.get(change_url(failed)).content.decode()
    assert "Cancel run" in on_asleep and "Cancel run" not in on_failed
    assert all(label in on_failed for label in buttons[1:])
