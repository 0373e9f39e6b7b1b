"""What a person sees in a browser, served by the production server: gunicorn, DEBUG off.

Static files are collected (`collectstatic`) and served by WhiteNoise; Swagger UI comes from
drf-spectacular-sidecar. Every request the browser makes is recorded, and any that leaves
localhost fails the test: the pages must work on a closed network.

Drives Debian's chromium (`/usr/bin/chromium`) through Playwright's sync API; Playwright's
bundled browsers are never downloaded. Screenshots go to `artifacts/`; with
UPDATE_DOC_SCREENSHOTS=1 the run list and the run page also replace the PNGs in `docs/images/`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from bench.workers import ROOT
from runtime.models import Run, RunStatus
from tests.support.browser import CHROMIUM_ARGS, playwright_sync_api, require_chromium
from tests.support.run_rows import add_events, add_steps, finished_run, make_run, waiting_run
from tests.support.users import operator as make_operator
from tests.support.webserver import collect_static, running_gunicorn
from tests.support.workers import ARTIFACTS

sync_api = playwright_sync_api()

PASSWORD = "pw-browser-1234"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
NOT_NETWORK = {"data", "blob", "about"}
DOC_IMAGES = ROOT / "docs" / "images"
ADMIN_HEADER = "rgb(65, 118, 144)"  # the admin stylesheet's --secondary, behind #header

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def server(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """gunicorn on the test database, after a collectstatic into a fresh STATIC_ROOT."""
    static_root = tmp_path_factory.mktemp("static")
    with django_db_blocker.unblock():
        collect_static(static_root)
        with running_gunicorn(static_root, ARTIFACTS / "gunicorn.log") as base:
            yield base


@pytest.fixture
def chromium() -> Path:
    return require_chromium()


@pytest.fixture
def operator(django_user_model: type[User]) -> User:
    return make_operator("operator", password=PASSWORD, is_staff=True)


def off_site(urls: list[str]) -> list[str]:
    """The recorded request URLs that would leave this machine."""
    return [
        url
        for url in urls
        if urlsplit(url).scheme not in NOT_NETWORK and urlsplit(url).hostname not in LOCAL_HOSTS
    ]


@contextmanager
def browser_page(chromium: Path, requests: list[str]) -> Iterator[sync_api.Page]:
    """A page in a fresh headless chromium; every request URL of its context goes to `requests`.

    The test touches the ORM only outside this block: code inside runs alongside Playwright's
    event loop, where Django would open (and leave open) a connection of its own.
    """
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="light")
        context.set_default_timeout(15_000)
        context.on("request", lambda request: requests.append(request.url))
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def log_in(page: sync_api.Page, base: str) -> None:
    page.goto(f"{base}{reverse('admin:login')}?next={reverse('admin:index')}")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    sync_api.expect(page.locator("#site-name")).to_be_visible()


def screenshot(page: sync_api.Page, name: str, *, for_docs: bool = False) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    if for_docs and os.environ.get("UPDATE_DOC_SCREENSHOTS") == "1":
        shutil.copyfile(path, DOC_IMAGES / name)


def computed(page: sync_api.Page, selector: str, prop: str) -> str:
    return str(page.locator(selector).first.evaluate(f"e => getComputedStyle(e).{prop}", None))


def failed_run() -> Run:
    run = make_run("examples.flaky", RunStatus.FAILED, error={"type": "StepFailed"})
    steps = add_steps(run, 1, name="examples.flaky_fetch", status="failed")
    add_events(run, [("run_created", None), ("run_started", None), ("step_failed", steps[0])])
    return run


def test_admin_browser_is_styled_and_cancels_a_waiting_run_under_gunicorn(
    server: str, chromium: Path, operator: User
) -> None:
    done = finished_run(step_count=4)
    for count in (2, 6):
        finished_run(step_count=count)
    failed_run()
    asleep = waiting_run()
    expect = sync_api.expect
    requests: list[str] = []

    with browser_page(chromium, requests) as page:
        page.goto(server + reverse("admin:login"))
        # The stylesheet is applied, not only served: the header has the admin's colour.
        assert computed(page, "#header", "backgroundColor") == ADMIN_HEADER
        log_in(page, server)
        expect(page.get_by_role("link", name="Runs")).to_be_visible()

        page.goto(server + reverse("admin:runtime_run_change", args=[done.pk]))
        expect(page.locator("#steps .fanfold-summary")).to_have_text("4 steps: 4 completed.")
        expect(page.locator("#steps tr.step-row")).to_have_count(4)
        timeline = page.locator("#timeline tr.event-row")
        expect(timeline).to_have_count(2 + 4 * 2 + 1)
        expect(timeline.first).to_contain_text("run_created")
        expect(timeline.nth(1)).to_contain_text("+0.012 s")
        expect(timeline.last).to_contain_text("run_completed")
        assert computed(page, "#header", "backgroundColor") == ADMIN_HEADER
        # Every "Fork from this step" button in one font: the first one, in a <form> nested in
        # the admin's own and so dropped by the parser, was once unstyled and larger.
        forks = page.locator("#steps button.fanfold-fork")
        expect(forks).to_have_count(4)
        fonts = forks.evaluate_all("bs => bs.map(b => getComputedStyle(b).font)")
        assert len(set(fonts)) == 1, fonts
        screenshot(page, "admin-run.png", for_docs=True)

        page.goto(server + reverse("admin:runtime_run_changelist"))
        expect(page.locator("#result_list tbody tr")).to_have_count(5)
        screenshot(page, "admin-runs.png", for_docs=True)
        page.check(f"input[name=_selected_action][value='{asleep.pk}']")
        page.select_option("select[name=action]", "cancel_runs")
        page.click("button[name=index]")
        expect(page.locator(".messagelist .success")).to_have_text("Cancelled 1 run.")
        row = page.locator("#result_list tr", has=page.locator(f"input[value='{asleep.pk}']"))
        expect(row.locator("td.field-status")).to_have_text("Cancelled")
        screenshot(page, "admin-runs-cancelled.png")

        # The first fork button posts to the fork view (it once submitted the change form
        # instead); these made-up rows start at position 0, which the view refuses by name.
        page.goto(server + reverse("admin:runtime_run_change", args=[done.pk]))
        page.locator("#steps button.fanfold-fork").first.click()
        expect(page.locator(".messagelist .error")).to_contain_text("not 0")
        page.locator("#steps button.fanfold-fork").nth(1).click()
        expect(page.locator(".messagelist .success")).to_contain_text("from position 1")

    assert off_site(requests) == []
    assert any("/static/admin/css/base." in url for url in requests)
    assert Run.objects.get(pk=asleep.pk).status == RunStatus.CANCELLED
    assert Run.objects.get(pk=done.pk).status == RunStatus.COMPLETED
    assert Run.objects.filter(forked_from=done.pk, forked_from_position=1).count() == 1


def schema_operations(page: sync_api.Page, base: str) -> set[str]:
    """The operation ids of the OpenAPI document, fetched with the page's session."""
    schema = page.request.get(f"{base}/api/schema/").json()
    return {op["operationId"] for ops in schema["paths"].values() for op in ops.values()}


def test_api_docs_browser_lists_every_operation_in_swagger_ui(
    server: str, chromium: Path, operator: User
) -> None:
    expect = sync_api.expect
    requests: list[str] = []

    with browser_page(chromium, requests) as page:
        log_in(page, server)
        operations = schema_operations(page, server)
        assert {"runs_list", "runs_start", "callbacks_post"} <= operations

        page.goto(f"{server}/api/docs/")
        expect(page.locator(".swagger-ui .opblock")).to_have_count(len(operations))
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("Fanfold API")
        expect(page.locator(".opblock-summary-path", has_text="/api/runs/").first).to_be_visible()
        # Swagger UI's stylesheet is applied: a GET operation has its coloured border.
        assert computed(page, ".opblock-get", "borderTopColor") != "rgb(0, 0, 0)"
        screenshot(page, "api-docs.png")

    assert off_site(requests) == []
    assert any("/static/drf_spectacular_sidecar/swagger-ui-dist/" in url for url in requests)
