"""docs/add-to-your-project.md: the site it describes passes `check --deploy` as written.

The page's files are written into a fresh `startproject` site and checked with this
repository's installed packages; tests/packaging/test_wheel_install.py runs the same site from
the wheel, with a worker and gunicorn.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench.workers import ROOT
from tests.docs.examples import site_files
from tests.support.site import PAGE, build_site, run
from tests.support.site import site_env as installed_site_env

pytestmark = pytest.mark.docs


def site_env(database_url: str, broker_url: str, **extra: str) -> dict[str, str]:
    """The page's variables, with this checkout's apps first on the path: the site runs the
    code under test, wherever the virtualenv's own install of the package points."""
    return installed_site_env(database_url, broker_url, PYTHONPATH=str(ROOT), **extra)


# The admin's login, fetched then posted (a wrong password: a 200 with the form again, where a
# refused CSRF check is a 403), over plain HTTP and as a TLS proxy passes it on with the
# backend's address as Host. Each: [GET status, POST status or the redirect's Location].
LOGIN_PROBE = """
import json
from django.test import Client

def login(host, **headers):
    client = Client(enforce_csrf_checks=True)
    page = client.get("/admin/login/", HTTP_HOST=host, **headers)
    if page.status_code != 200:
        return [page.status_code, page.get("Location")]
    form = {"username": "nobody", "password": "wrong",
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value}
    return [200, client.post("/admin/login/", form, HTTP_HOST=host, **headers).status_code]

proxied = {"HTTP_X_FORWARDED_PROTO": "https", "HTTP_ORIGIN": "https://shop.example.com"}
print(json.dumps({"plain": login("localhost"), "proxied": login("127.0.0.1", **proxied)}))
"""


def test_docs_site_page_writes_the_files_a_site_needs() -> None:
    written = {(f.path, f.append) for f in site_files(PAGE)}
    assert written == {
        ("mysite/celery.py", False),
        ("mysite/__init__.py", False),
        ("mysite/settings.py", True),
        ("mysite/urls.py", True),
        ("shop/workflows.py", False),
        ("gunicorn.conf.py", False),
    }
    for file in site_files(PAGE):
        compile(file.code, file.path, "exec")


def test_docs_site_passes_check_deploy_as_written(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_site(sys.executable, site)
    env = site_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", "memory://localhost/")
    check = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    with pytest.raises(AssertionError, match=r"fanfold\.W012"):  # the static files first
        run(check, site, env)
    run([sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"], site, env)
    out = run(check, site, env)
    assert "no issues" in out
    run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], site, env)
    shown = run([sys.executable, "manage.py", "fanfold", "runs", "--json"], site, env)
    assert shown.strip() == "[]"


def test_docs_site_warns_of_fanfold_variables_its_settings_do_not_read(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_site(sys.executable, site)
    env = site_env(
        f"sqlite:///{tmp_path / 'db.sqlite3'}", "memory://localhost/", FANFOLD_LEASE_SECONDS="9"
    )
    with pytest.raises(AssertionError, match=r"fanfold\.W007"):
        run([sys.executable, "manage.py", "check", "--fail-level", "WARNING"], site, env)


def test_docs_site_tries_out_over_plain_http_and_logs_in_behind_a_proxy(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build_site(sys.executable, site)
    env = site_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", "memory://localhost/")
    env["DJANGO_ALLOWED_HOSTS"] = "shop.example.com,127.0.0.1,localhost"
    run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], site, env)
    run([sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"], site, env)

    def probe(**extra: str) -> dict[str, list[object]]:
        shell = [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", LOGIN_PROBE]
        return json.loads(run(shell, site, {**env, **extra}).strip().splitlines()[-1])

    # Production defaults: plain HTTP is sent to HTTPS; the public origin is trusted.
    assert probe() == {
        "plain": [301, "https://localhost/admin/login/"],
        "proxied": [200, 200],
    }
    # The try-out the page describes: the admin over plain HTTP, its login form accepted.
    assert probe(DJANGO_SECURE_SSL_REDIRECT="0")["plain"] == [200, 200]
    # Origins given explicitly replace the default ones: the proxy's public name is refused.
    other = probe(DJANGO_CSRF_TRUSTED_ORIGINS="https://other.example.com")
    assert other["proxied"] == [200, 403]
