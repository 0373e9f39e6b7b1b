"""Headless chromium for the admin's browser tests (Debian's /usr/bin/chromium via Playwright).

Playwright's bundled browsers are never downloaded; without chromium or Playwright the test
skips (fails under CI=true).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

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


def playwright_sync_api() -> Any:
    """`playwright.sync_api`, for a test module; without it the module skips (fails under CI)."""
    if os.environ.get("CI", "").lower() == "true":
        import playwright.sync_api

        return playwright.sync_api  # an ImportError here fails the run, as it should on CI
    return pytest.importorskip("playwright.sync_api")


def require_chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message}, and CI=true requires it", pytrace=False)
        pytest.skip(message)
    return CHROMIUM


@contextmanager
def browser_page(chromium: Path, sync_api: Any) -> Iterator[Any]:
    """A page in a fresh headless chromium; touch the ORM only outside this block (Django
    would open a connection of its own inside Playwright's event loop)."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.set_default_timeout(15_000)
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def log_in(page: Any, base: str, login_url: str, username: str, password: str) -> None:
    page.goto(f"{base}{login_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
