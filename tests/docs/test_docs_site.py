"""docs/add-to-your-project.md: the site it describes passes `check --deploy` as written.

The page's files are written into a fresh `startproject` site and checked with this
repository's installed packages; tests/packaging/test_wheel_install.py runs the same site from
the wheel, with a worker and gunicorn.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.docs.examples import site_files
from tests.support.site import PAGE, build_site, run, site_env

pytestmark = pytest.mark.docs


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
