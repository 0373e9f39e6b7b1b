"""The run timeline in a real browser: a sequential run and a 1,000-branch fan-out.

Screenshots go to `artifacts/admin-timeline-seq.png` and `artifacts/admin-timeline-fanout.png`;
the fan-out page's server time and browser load time go to `artifacts/admin-timeline.json`
(figures for the notes, not assertions).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from runtime.testing import use_writer
from tests.support.browser import browser_page, log_in, playwright_sync_api, require_chromium
from tests.support.fanout_rows import fanout_run
from tests.support.run_rows import finished_run
from tests.support.users import operator
from tests.support.workers import ARTIFACTS

sync_api = playwright_sync_api()

PASSWORD = "pw-timeline-1234"
BRANCHES = 1000
LANES = 32

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _process_writer() -> Iterator[None]:
    with use_writer():
        yield


def server_seconds(url: str, user: User) -> float:
    """The best of three renders of `url` through the test client (no browser, no network)."""
    client = Client()
    client.force_login(user)
    times = []
    for _ in range(3):
        began = time.perf_counter()
        assert client.get(url).status_code == 200
        times.append(time.perf_counter() - began)
    return min(times)


def test_admin_browser_shows_the_timeline_of_a_sequential_run_and_a_large_fanout(
    live_server: object, django_user_model: type[User]
) -> None:
    chromium: Path = require_chromium()
    base = str(live_server)
    user = operator("viewer", password=PASSWORD, is_staff=True)
    sequential = finished_run(step_count=6)
    fanout = fanout_run(BRANCHES, lanes=LANES, with_child=True)
    fanout_url = reverse("admin:runtime_run_change", args=[fanout.pk])
    render = server_seconds(fanout_url, user)
    expect = sync_api.expect
    ARTIFACTS.mkdir(exist_ok=True)

    with browser_page(chromium, sync_api) as page:
        log_in(page, base, reverse("admin:login"), "viewer", PASSWORD)
        page.goto(base + reverse("admin:runtime_run_change", args=[sequential.pk]))
        bars = page.locator("#run-timeline .fanfold-step .fanfold-bar")
        expect(bars).to_have_count(6)
        expect(bars.first).to_be_visible()
        expect(page.locator("#timeline tr.event-row").first).to_contain_text("run_created")
        page.screenshot(path=str(ARTIFACTS / "admin-timeline-seq.png"), full_page=True)

        began = time.perf_counter()
        page.goto(base + fanout_url, wait_until="load")
        load = time.perf_counter() - began
        fan = page.locator("#run-timeline details.fanfold-tl-fanout")
        expect(fan.locator("summary")).to_contain_text(
            f"{BRANCHES} branches, {BRANCHES} completed (succeeded), {LANES} lanes"
        )
        lanes = fan.locator(".fanfold-branch")
        expect(lanes.first).to_be_hidden()  # a large fan-out starts collapsed
        fan.locator("summary").click()
        expect(lanes).to_have_count(LANES)
        expect(lanes.first).to_be_visible()
        expect(fan.locator(".fanfold-bar[data-position]")).to_have_count(BRANCHES)
        expect(fan.locator(".fanfold-retry")).to_have_count(1)
        expect(fan.locator("a.fanfold-child")).to_have_count(1)
        page.screenshot(path=str(ARTIFACTS / "admin-timeline-fanout.png"), full_page=True)

    figures = {"branches": BRANCHES, "server_render_s": round(render, 3), "load_s": round(load, 3)}
    (ARTIFACTS / "admin-timeline.json").write_text(json.dumps(figures))
