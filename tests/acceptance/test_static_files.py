"""Static files in every mode: gunicorn and runserver, DEBUG off (collected files, hashed names)
and DEBUG on (the apps' own files), without a file server of their own.

The admin's login page names its stylesheets; each must be served as CSS by the same process.
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from bench.workers import ROOT
from tests.support.webserver import (
    collect_static,
    production_env,
    running_gunicorn,
    running_runserver,
)
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


def test_static_files_not_collected_are_named_by_check_and_at_gunicorn_start(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "static"
    empty.mkdir()
    fix = "python manage.py collectstatic --noinput"
    check = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=production_env(empty),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "fanfold.W012" in check.stderr and fix in check.stderr, check.stderr
    log = ARTIFACTS / "static-uncollected-gunicorn.log"
    with running_gunicorn(empty, log, workers=1) as base:
        try:  # answered once the worker has loaded the site (the arbiter listens before)
            urllib.request.urlopen(f"{base}/api/schema/", timeout=30)
        except urllib.error.HTTPError as refused:
            assert refused.code in (401, 403)
    said = log.read_text()
    assert "Web process start: The static files are not collected" in said, said
    assert fix in said
