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
from datetime import timedelta

from runtime import CallbackTimedOut, step, workflow


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


@workflow(name="shop.reminder")
def reminder(ctx, order):
    ctx.sleep(timedelta(days=2))
    paid = ctx.create_callback("paid", timeout=timedelta(days=7))
    try:
        return {"order": order, "paid": paid.wait()}
    except CallbackTimedOut:
        return {"order": order, "paid": None}
"""

# A user's tests, written from docs/testing.md: the installed plugin's fixture, no conftest.
USER_TESTS = """from datetime import timedelta

from shop.workflows import checkout, price, reminder


def test_checkout_prices_every_sku(fanfold_env):
    fanfold_env.mock_step(price, side_effect=lambda sku: {"sku": sku, "price": 1})
    assert fanfold_env.run(checkout, ["a", "bb"])["total"] == 2
    assert sorted(fanfold_env.calls(price)) == [(("a",), {}), (("bb",), {})]


def test_reminder_is_paid_after_two_days(db, fanfold_env):
    run = fanfold_env.start(reminder, 7)
    assert fanfold_env.run_until_blocked(run).kind == "sleep"
    fanfold_env.skip(timedelta(days=2))
    assert run.waiting_on().name == "paid"
    fanfold_env.post_callback(run, "paid", result="card")
    assert run.wait() == {"order": 7, "paid": "card"}


def test_reminder_gives_up_after_a_week(fanfold_env):
    began = fanfold_env.now()
    assert fanfold_env.run(reminder, 8) == {"order": 8, "paid": None}
    assert fanfold_env.now() - began == timedelta(days=9)
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


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A new `startproject` site with the wheel installed in a virtualenv of its own: the
    site's folder and its Python."""
    tmp_path = tmp_path_factory.mktemp("site")
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
    return site, python


def test_wheel_runs_a_fanout_in_a_new_startproject_site(site: tuple[Path, str]) -> None:
    folder, python = site
    env = clean_env()
    run([python, "manage.py", "check", "--fail-level", "WARNING"], folder, env)
    run([python, "manage.py", "migrate", "--verbosity", "0"], folder, env)
    skus = json.dumps([["a", "bb", "ccc"]])
    startrun = [python, "manage.py", "startrun", "shop.checkout", "--args", skus]
    out = run([*startrun, "--wait", "--timeout", "60"], folder, env, timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "completed"
    assert result["result"]["total"] == 60
    assert [p["sku"] for p in result["result"]["prices"]] == ["a", "bb", "ccc"]


def test_wheel_plugin_runs_a_users_tests_under_plain_pytest(site: tuple[Path, str]) -> None:
    folder, python = site
    env = clean_env()
    install = [python, "-m", "pip", "install", "--quiet", "pytest>=8.3", "pytest-django>=4.9"]
    run(install, folder, env, timeout=300)
    (folder / "pytest.ini").write_text("[pytest]\nDJANGO_SETTINGS_MODULE = mysite.settings\n")
    (folder / "shop" / "test_workflows.py").write_text(USER_TESTS)
    out = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], folder, env, timeout=300)
    assert "3 passed" in out
