"""A run's page: input, outcome, steps and timeline, bounded however long the run."""

from __future__ import annotations

import re

import pytest
from admin_pages import change_url
from django.test import Client

from runtime.models import EventType, RunStatus, StepStatus
from tests.support.run_rows import TICK, add_events, add_steps, finished_run, make_run

pytestmark = pytest.mark.django_db


def rows(html: str, css_class: str) -> int:
    return len(re.findall(rf'<tr class="{css_class}">', html))


def test_run_page_shows_input_result_steps_and_timeline(staff_client: Client) -> None:
    run = finished_run(step_count=3, input={"args": [3], "kwargs": {"label": "abc"}})

    html = staff_client.get(change_url(run)).content.decode()

    assert "&quot;label&quot;: &quot;abc&quot;" in html  # pretty-printed input
    assert "<pre class='fanfold-json'>6</pre>" in html  # the result
    assert "3 steps: 3 completed." in html
    assert rows(html, "step-row") == 3
    assert rows(html, "event-row") == 2 + 3 * 2 + 1
    assert html.index("run_created") < html.index("step_started") < html.index("run_completed")
    assert "+0.000 s" in html
    assert "+0.012 s" in html  # the second event, one TICK after creation
    assert "0.012 s" in html  # a step's duration


def test_run_page_shows_the_error_and_its_traceback(staff_client: Client) -> None:
    run = make_run(
        status=RunStatus.FAILED,
        error={
            "type": "StepFailed",
            "message": "step examples.add failed",
            "traceback": 'Traceback (most recent call last):\n  File "x.py", line 1\nStepFailed',
        },
    )
    add_steps(run, 1, status=StepStatus.FAILED, error={"type": "KeyError", "message": "'k'"})

    html = staff_client.get(change_url(run)).content.decode()

    assert "<strong>StepFailed: step examples.add failed</strong>" in html
    assert re.search(r"<pre class='fanfold-traceback'>Traceback \(most recent call last\)", html)
    assert "KeyError: &#x27;k&#x27;" in html


def test_run_page_escapes_recorded_values(staff_client: Client) -> None:
    run = make_run(input={"args": ["<script>alert(1)</script>"], "kwargs": {}}, result="<b>x</b>")

    html = staff_client.get(change_url(run)).content.decode()

    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>x</b>" not in html


def test_run_page_paginates_a_run_of_20000_steps(
    staff_client: Client, django_assert_max_num_queries: object
) -> None:
    run = make_run(status=RunStatus.RUNNING, finished_at=None)
    steps = add_steps(run, 19_998)
    add_steps(run, 2, status=StepStatus.FAILED, first_position=19_998)
    add_events(run, [(EventType.STEP_COMPLETED, step) for step in steps], spacing=TICK / 12)

    # The fields (its search attributes among them), steps, events and timeline; messaging (the
    # mailbox's counts and newest messages, values, signal waits); its updates. Whatever the
    # size of the run.
    with django_assert_max_num_queries(25):  # type: ignore[operator]
        html = staff_client.get(change_url(run)).content.decode()

    assert "20000 steps: 19998 completed, 2 failed." in html
    assert rows(html, "step-row") == 100
    assert rows(html, "event-row") == 100
    assert "Showing steps 1 to 100 of 20000, page 1 of 200." in html
    assert "?steps_page=2#steps" in html
    assert "?events_page=2#timeline" in html

    last = staff_client.get(change_url(run), {"steps_page": 200, "events_page": 3})
    html = last.content.decode()
    assert rows(html, "step-row") == 100
    assert "Showing steps 19901 to 20000 of 20000, page 200 of 200." in html
    assert "Showing events 201 to 300 of 19998, page 3 of 200." in html
    assert "steps_page=199&amp;events_page=3#steps" in html  # the other table keeps its page
    assert ">19999</td>" in html
