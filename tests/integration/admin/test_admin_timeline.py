"""The run page's timeline and the per-workflow page, read as HTML."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from runtime.admin.workflows import percentile
from tests.integration.admin.admin_pages import change_url
from tests.support.fanout_rows import fanout_run
from tests.support.run_rows import finished_run, make_run, waiting_run

pytestmark = pytest.mark.django_db


def timeline(html: str) -> str:
    match = re.search(r"<div class=\"fanfold-timeline\">(.*?)</div>\s*</fieldset>", html, re.S)
    assert match, "no timeline on the page"
    return match.group(1)


def test_admin_timeline_draws_one_bar_per_sequential_step(staff_client: Client) -> None:
    run = finished_run(step_count=4)
    html = staff_client.get(change_url(run)).content.decode()
    drawn = timeline(html)
    assert drawn.count("class='fanfold-tl-row fanfold-step'") == 4
    assert drawn.count("fanfold-bar fanfold-completed") == 4
    assert "#3 examples.add: completed, attempt 1, 0.012 s" in drawn
    assert 'http-equiv="refresh"' not in html  # finished: nothing to follow


def test_admin_timeline_refreshes_a_run_that_has_not_finished(staff_client: Client) -> None:
    html = staff_client.get(change_url(waiting_run())).content.decode()
    assert '<meta http-equiv="refresh" content="3">' in html
    assert "fanfold-waiting fanfold-wait" in timeline(html)  # the sleep, drawn as a wait


def test_admin_timeline_packs_fanout_branches_into_lanes_with_retries_and_children(
    staff_client: Client,
) -> None:
    run = fanout_run(64, lanes=16, with_child=True)
    drawn = timeline(staff_client.get(change_url(run)).content.decode())
    assert "<details class='fanfold-tl-fanout' open>" in drawn
    assert "fan-out #1 to #64: 64 branches, 64 completed (succeeded), 16 lanes" in drawn
    assert drawn.count("class='fanfold-tl-row fanfold-branch'") == 16
    assert drawn.count("data-position=") == 65  # the inline step and every branch
    assert drawn.count("class='fanfold-retry'") == 1
    assert re.search(
        r"<a class='fanfold-child' href='/admin/runtime/run/[0-9a-f-]+/change/'", drawn
    )


def test_admin_timeline_collapses_a_large_fanout(staff_client: Client) -> None:
    drawn = timeline(staff_client.get(change_url(fanout_run(300))).content.decode())
    assert "<details class='fanfold-tl-fanout'><summary>" in drawn


def test_admin_workflow_page_counts_runs_and_step_percentiles(staff_client: Client) -> None:
    for _ in range(3):
        finished_run(step_count=2)
    make_run("examples.sequential_sum", "failed")
    url = reverse("admin:runtime_run_workflow", args=["examples.sequential_sum"])
    html = staff_client.get(url).content.decode()
    assert re.search(r">Completed</a></td><td class=\"num\">3<", html)
    assert re.search(r">Failed</a></td><td class=\"num\">1<", html)
    row = re.search(r"<tr class=\"step-row\"><td>examples.add</td>(.*?)</tr>", html).group(1)
    assert re.findall(r">([^<]+)</td>", row) == ["6", "0", "0.012 s", "0.012 s"]


def test_admin_workflow_page_needs_staff(client: Client) -> None:
    url = reverse("admin:runtime_run_workflow", args=["examples.sequential_sum"])
    assert client.get(url).status_code == 302  # to the login page


def test_admin_workflow_page_answers_not_found_for_a_name_with_nul(staff_client: Client) -> None:
    # PostgreSQL text cannot hold NUL: the page used to fail its query and answer 500.
    response = staff_client.get("/admin/runtime/run/workflow/a%00b/")
    assert response.status_code == 404


def test_admin_workflow_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.95), percentile([], 0.5)) == (
        50.0,
        95.0,
        0.0,
    )
