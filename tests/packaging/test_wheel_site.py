"""The wheel in a site built from docs/add-to-your-project.md alone, run as in production.

`check --deploy`, `collectstatic`, a prefork Celery worker of the site's own app, gunicorn with
the page's configuration, an async workflow started over the API and approved through its
callback: the access log must not hold the token. PostgreSQL (a database of this test's own)
and the Redis broker the test suite uses. Twice: on this interpreter's Django 5.2, and on
Django 6.1 with Python 3.12 or 3.13 (whose `startproject` writes other settings), in a
virtualenv of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.support.site import build_site, clean_env, run, site_env
from tests.support.waiting import wait_until
from tests.support.webserver import free_port

pytestmark = pytest.mark.wheel


@pytest.fixture
def site_database() -> Iterator[str]:
    """A PostgreSQL database of its own beside the test database, dropped afterwards."""
    url = os.environ.get("TEST_DATABASE_URL") or os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("needs TEST_DATABASE_URL on PostgreSQL")
    parts = urlsplit(url)
    name = parts.path.strip("/") + "_site"
    server = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _rollbacks(database_url: str) -> int:
    """Transactions rolled back in that database so far (its processes have ended)."""
    parts = urlsplit(database_url)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres"))) as server:
        stats = "SELECT xact_rollback FROM pg_stat_database WHERE datname = %s"
        row = server.execute(stats, [parts.path.strip("/")]).fetchone()
    return int(row[0]) if row else 0


def _django6_python() -> str:
    """A Python 3.12 or 3.13 for the Django 6.1 site (on PATH or under pyenv, as scripts/test
    finds it for its Django 6.1 pass); fail under CI=true, skip locally, when there is none."""
    pyenv = sorted(Path("/root/.pyenv/versions").glob("3.1[23].*/bin/python3"))
    for candidate in ("python3.12", "python3.13", *map(str, pyenv)):
        found = shutil.which(candidate)
        if found:
            probe = [found, "-c", "import sys; print(sys.version_info[:2] in ((3, 12), (3, 13)))"]
            done = subprocess.run(probe, capture_output=True, text=True, check=False)
            if done.stdout.strip() == "True":
                return found
    message = "the Django 6.1 site needs Python 3.12 or 3.13"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}, and CI=true requires it", pytrace=False)
    pytest.skip(message)


def _site_venv(wheel: Path, tmp_path: Path, django: str) -> Path:
    """A fresh virtualenv with the wheel and its `deploy` extra: on this interpreter with its
    Django 5.2 (pip), or on Python 3.12/3.13 with Django 6.1 (uv if it is installed beside
    this interpreter, which resolves in seconds, else pip)."""
    venv = tmp_path / "venv"
    requirements = [f"{wheel}[deploy]"]
    if django == "5.2":
        run([sys.executable, "-m", "venv", str(venv)], tmp_path, clean_env())
        requirements.append("Django>=5.2,<5.3")
    else:
        run([_django6_python(), "-m", "venv", str(venv)], tmp_path, clean_env())
        requirements.append("Django>=6.1,<6.2")
    python = str(venv / "bin" / "python")
    uv = Path(sys.executable).with_name("uv")
    if django != "5.2" and uv.exists():
        install = [str(uv), "pip", "install", "--quiet", "--python", python]
    else:
        install = [python, "-m", "pip", "install", "--quiet"]
    run([*install, *requirements], tmp_path, clean_env())
    version = [python, "-c", "import django; print(django.get_version())"]
    assert run(version, tmp_path, clean_env()).startswith(django)
    return venv


@contextmanager
def _process(args: list[str], cwd: Path, env: dict[str, str], log: Path) -> Iterator[None]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _call(base: str, path: str, api_token: str | None, body: Any = None) -> Any:
    """One request as the TLS proxy in front would pass it on (X-Forwarded-Proto: https)."""
    headers = {"X-Forwarded-Proto": "https", "Content-Type": "application/json"}
    if api_token:
        headers["Authorization"] = f"Token {api_token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _until(what: str, probe: Any, timeout: float = 120) -> Any:
    def listening() -> Any:
        try:
            return probe()
        except OSError:  # gunicorn not listening yet
            return None

    return wait_until(listening, timeout, interval=0.3, message=what)


@pytest.mark.parametrize("django", ["5.2", "6.1"])
def test_wheel_serves_the_docs_site_with_a_worker_and_gunicorn(
    wheel: Path, tmp_path: Path, site_database: str, django: str
) -> None:
    venv = _site_venv(wheel, tmp_path, django)
    python, bin_dir = str(venv / "bin" / "python"), venv / "bin"
    site = tmp_path / "site"
    build_site(python, site)
    broker = os.environ.get("TEST_BROKER_URL") or os.environ.get("CELERY_BROKER_URL", "")
    if not broker.startswith("redis"):
        pytest.skip("needs TEST_BROKER_URL on Redis")
    port = free_port()
    env = site_env(site_database, broker, GUNICORN_BIND=f"127.0.0.1:{port}", GUNICORN_WORKERS="1")

    manage = [python, "manage.py"]
    run([*manage, "collectstatic", "--noinput", "--verbosity", "0"], site, env)
    assert "no issues" in run([*manage, "check", "--deploy", "--fail-level", "WARNING"], site, env)
    run([*manage, "migrate", "--verbosity", "0"], site, env)
    assert (site / "staticfiles" / "admin" / "css" / "base.css").exists()
    admin = {"DJANGO_SUPERUSER_PASSWORD": "a long enough password 42"}
    superuser = [*manage, "createsuperuser", "--noinput", "--username", "ops", "--email", "o@x.org"]
    run(superuser, site, {**env, **admin})
    api_token = run([*manage, "drf_create_token", "ops"], site, env).split()[2]

    worker = [str(bin_dir / "celery"), "-A", "mysite", "worker", "-P", "prefork", "-c", "2"]
    worker_log, access_log = tmp_path / "worker.log", tmp_path / "gunicorn.log"
    with (
        _process([*worker, "-l", "INFO"], site, env, worker_log),
        _process([str(bin_dir / "gunicorn"), "-c", "gunicorn.conf.py"], site, env, access_log),
    ):
        base = f"http://127.0.0.1:{port}"
        started = _until(
            "gunicorn",
            lambda: _call(base, "/api/runs/", api_token, {"workflow": "shop.order",
                                                         "args": ["42", ["a", "bb"]]}),
        )  # fmt: skip
        run_path = f"/api/runs/{started['id']}/"

        def callback_token() -> str | None:
            steps = _call(base, run_path + "steps/", api_token)["results"]
            return next((s["callback_token"] for s in steps if s["callback_token"]), None)

        token = _until("callback step (is the worker running?)", callback_token)
        _call(base, f"/api/callbacks/{token}/", None, {"result": {"approved": True}})
        finished = _until(
            "finished run",
            lambda: (
                (r := _call(base, run_path, api_token))["status"] in ("completed", "failed") and r
            ),
        )
    assert finished["status"] == "completed", finished
    assert finished["result"]["decision"] == {"approved": True}
    assert [r["sku"] for r in finished["result"]["reserved"]] == ["a", "bb"]
    logged = access_log.read_text()
    assert "POST /api/callbacks/" in logged
    assert token not in logged
    # A normal run: no guard statement failed (a `division by zero` in the server's log) and
    # no psycopg pipeline was aborted.
    assert "pipeline aborted" not in worker_log.read_text()
    assert _rollbacks(site_database) == 0
