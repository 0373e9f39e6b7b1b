"""The run admin in a real browser: log in, read a run, cancel a waiting one from the list.

Drives Debian's chromium (`/usr/bin/chromium`) through Playwright's sync API; Playwright's
bundled browsers are never downloaded. The page is saved to `artifacts/admin-run.png`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from runtime.models import Run, RunStatus
from runtime.testing import use_writer
from tests.support.run_rows import finished_run, waiting_run
from tests.support.workers import ARTIFACTS

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "pw-browser-1234"

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _process_writer() -> Iterator[None]:
    """The live server cancels through the checkpoint writer thread: a fresh one, closed after."""
    with use_writer():
        yield


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message}, and CI=true requires it", pytrace=False)
        pytest.skip(message)
    return CHROMIUM


@contextmanager
def browser_page(chromium: Path) -> Iterator[sync_api.Page]:
    """A page in a fresh headless chromium.

    The test touches the ORM only outside this block: code inside runs alongside Playwright's
    event loop, where Django would open (and leave open) a connection of its own.
    """
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.set_default_timeout(15_000)
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def test_admin_browser_shows_a_run_and_cancels_a_waiting_one(
    live_server: object, chromium: Path, django_user_model: type[User]
) -> None:
    base = str(live_server)
    django_user_model.objects.create_user("operator", password=PASSWORD, is_staff=True)
    done = finished_run(step_count=4)
    asleep = waiting_run()
    expect = sync_api.expect
    ARTIFACTS.mkdir(exist_ok=True)

    with browser_page(chromium) as page:
        page.goto(f"{base}{reverse('admin:login')}?next={reverse('admin:index')}")
        page.fill("#id_username", "operator")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        expect(page.locator("#site-name")).to_be_visible()
        expect(page.get_by_role("link", name="Runs")).to_be_visible()

        page.goto(base + reverse("admin:runtime_run_change", args=[done.pk]))
        expect(page.locator("#steps .fanfold-summary")).to_have_text("4 steps: 4 completed.")
        expect(page.locator("#steps tr.step-row")).to_have_count(4)
        timeline = page.locator("#timeline tr.event-row")
        expect(timeline).to_have_count(2 + 4 * 2 + 1)
        expect(timeline.first).to_contain_text("run_created")
        expect(timeline.nth(1)).to_contain_text("+0.012 s")
        expect(timeline.last).to_contain_text("run_completed")
        page.screenshot(path=str(ARTIFACTS / "admin-run.png"), full_page=True)

        page.goto(base + reverse("admin:runtime_run_changelist"))
        page.check(f"input[name=_selected_action][value='{asleep.pk}']")
        page.select_option("select[name=action]", "cancel_runs")
        page.click("button[name=index]")
        expect(page.locator(".messagelist .success")).to_have_text("Cancelled 1 run.")
        row = page.locator("#result_list tr", has=page.locator(f"input[value='{asleep.pk}']"))
        expect(row.locator("td.field-status")).to_have_text("Cancelled")
        page.screenshot(path=str(ARTIFACTS / "admin-runs.png"), full_page=True)

    assert Run.objects.get(pk=asleep.pk).status == RunStatus.CANCELLED
    assert Run.objects.get(pk=done.pk).status == RunStatus.COMPLETED
