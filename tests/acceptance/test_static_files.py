"""Static files in every mode: gunicorn and runserver, DEBUG off (collected files, hashed names)
and DEBUG on (the apps' own files), without a file server of their own.

The admin's login page names its stylesheets; each must be served as CSS by the same process.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.support.webserver import collect_static, running_gunicorn, running_runserver
from tests.support.workers import ARTIFACTS

STYLESHEET = re.compile(r'href="(/static/admin/css/base[^"]*\.css)"')

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def collected(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    static_root = tmp_path_factory.mktemp("static")
    collect_static(static_root)
    return static_root


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=15) as response:
        return response.status, dict(response.headers), response.read()


def stylesheet_of_login_page(base: str) -> tuple[str, dict[str, str], bytes]:
    status, _, page = fetch(f"{base}/admin/login/")
    assert status == 200
    match = STYLESHEET.search(page.decode())
    assert match is not None, "the login page names no admin stylesheet"
    status, headers, body = fetch(base + match.group(1))
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")
    assert b"--header-bg" in body
    return match.group(1), headers, body


SERVERS: dict[str, Callable[[Path], AbstractContextManager[str]]] = {
    "gunicorn": lambda root: running_gunicorn(root, ARTIFACTS / "static-gunicorn.log"),
    "runserver": lambda root: running_runserver(root, ARTIFACTS / "static-runserver.log"),
}


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_static_files_are_served_hashed_with_debug_off(server: str, collected: Path) -> None:
    with SERVERS[server](collected) as base:
        path, headers, _ = stylesheet_of_login_page(base)
        # Hashed names from the manifest, cacheable for good.
        assert re.search(r"base\.[0-9a-f]{12}\.css$", path)
        assert "immutable" in headers.get("Cache-Control", "")


def test_static_files_are_served_by_runserver_with_debug_on(tmp_path: Path) -> None:
    empty = tmp_path / "not-collected"
    empty.mkdir()
    log = ARTIFACTS / "static-runserver-debug.log"
    with running_runserver(empty, log, DJANGO_DEBUG="1") as base:
        path, _, _ = stylesheet_of_login_page(base)
        assert path == "/static/admin/css/base.css"  # straight from the admin app's folder
