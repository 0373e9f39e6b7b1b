"""The wheel as a user installs it: into a fresh virtualenv, in a new `startproject` site.

The wheel is built from this checkout, installed with pip (dependencies from the package index,
through pip's cache), and used the way the user guide says: `runtime` and `api` in
INSTALLED_APPS, the site's own Celery app, a `workflows.py` in one of the site's apps. The site
runs on SQLite with the embedded `memory://` broker, so no server is needed.
"""

from __future__ import annotations

import json
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.support.site import clean_env, run

pytestmark = pytest.mark.wheel

SHIPPED = {"runtime", "publisher", "api"}

CELERY_APP = """\
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")

app = Celery("mysite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
"""

SETTINGS = """
INSTALLED_APPS += ["rest_framework", "runtime", "api", "shop"]
CELERY_BROKER_URL = "memory://localhost/"
CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
DATABASES["default"]["OPTIONS"] = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "fanfold_payloads": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": BASE_DIR / "payloads"},
    },
}
"""

WORKFLOWS = """\
from runtime import step, workflow


@step(name="shop.price")
def price(sku):
    return {"sku": sku, "price": len(sku) * 10}


@step(name="shop.total")
def total(prices):
    return sum(p["price"] for p in prices)


@workflow(name="shop.checkout")
def checkout(ctx, skus):
    prices = ctx.map(price, skus, max_concurrency=2)
    return {"prices": prices, "total": ctx.step(total, prices)}
"""


def test_wheel_ships_the_apps_and_nothing_that_collides(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == SHIPPED
    assert "runtime/templates/admin/runtime/run/change_form.html" in names
    assert any(name.startswith("runtime/migrations/0001_") for name in names)
    assert "runtime/management/commands/startrun.py" in names
    # PEP 561: users' type checkers read the shipped packages' annotations.
    assert {f"{package}/py.typed" for package in SHIPPED} <= set(names)


def test_wheel_runs_a_fanout_in_a_new_startproject_site(wheel: Path, tmp_path: Path) -> None:
    env = clean_env()
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "--quiet", str(wheel)], cwd=tmp_path, env=env)

    site = tmp_path / "site"
    site.mkdir()
    run([str(venv / "bin" / "django-admin"), "startproject", "mysite", str(site)], site, env)
    (site / "mysite" / "celery.py").write_text(CELERY_APP)
    (site / "mysite" / "__init__.py").write_text(
        "from .celery import app as celery_app\n\n__all__ = ['celery_app']\n"
    )
    run([python, "manage.py", "startapp", "shop"], site, env)
    (site / "shop" / "workflows.py").write_text(WORKFLOWS)
    with (site / "mysite" / "settings.py").open("a") as settings:
        settings.write(textwrap.dedent(SETTINGS))

    run([python, "manage.py", "check", "--fail-level", "WARNING"], site, env)
    run([python, "manage.py", "migrate", "--verbosity", "0"], site, env)
    skus = json.dumps([["a", "bb", "ccc"]])
    startrun = [python, "manage.py", "startrun", "shop.checkout", "--args", skus]
    out = run([*startrun, "--wait", "--timeout", "60"], site, env, timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "completed"
    assert result["result"]["total"] == 60
    assert [p["sku"] for p in result["result"]["prices"]] == ["a", "bb", "ccc"]
