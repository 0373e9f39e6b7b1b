"""Production settings: the secret-key deploy check, and the deployment guide's settings passing
`manage.py check --deploy` (read from docs/deploying.md, so the guide cannot drift)."""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

from django.core.checks import ERROR, run_checks
from django.test import override_settings

from bench.workers import ROOT
from runtime.checks import check_secret_key_for_deploy

GUIDE = ROOT / "docs" / "deploying.md"
MARKER = "<!-- docs: production-env -->"
DEV_KEY = "django-insecure-fanfold-development-key-change-me"


def documented_production_env() -> dict[str, str]:
    """The `export NAME=VALUE` lines of the guide's production block."""
    text = GUIDE.read_text()
    block = text.split(MARKER, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    env: dict[str, str] = {}
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            name, _, value = words[1].partition("=")
            env[name] = value
    return env


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # The checkout's collection of static files stays (scripts/test gives the Django 6 pass
    # one of its own); every other setting is the guide's.
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "FANFOLD_")) or k == "DJANGO_STATIC_ROOT"
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@override_settings(DEBUG=False, SECRET_KEY=DEV_KEY)
def test_deploy_check_refuses_the_development_key_outside_debug() -> None:
    errors = check_secret_key_for_deploy()
    assert [(e.id, e.level) for e in errors] == [("fanfold.E003", ERROR)]


@override_settings(DEBUG=False, SECRET_KEY="django-insecure-" + secrets.token_urlsafe(40))
def test_deploy_check_refuses_a_startproject_generated_key() -> None:
    assert [e.id for e in check_secret_key_for_deploy()] == ["fanfold.E003"]


@override_settings(DEBUG=True, SECRET_KEY=DEV_KEY)
def test_deploy_check_allows_the_development_key_with_debug() -> None:
    assert check_secret_key_for_deploy() == []


@override_settings(DEBUG=False, SECRET_KEY=secrets.token_urlsafe(50))
def test_deploy_check_accepts_a_real_key() -> None:
    assert check_secret_key_for_deploy() == []


@override_settings(DEBUG=False, SECRET_KEY=DEV_KEY)
def test_deploy_check_runs_only_with_deploy() -> None:
    assert "fanfold.E003" not in {e.id for e in run_checks(include_deployment_checks=False)}
    assert "fanfold.E003" in {e.id for e in run_checks(include_deployment_checks=True)}


def test_deploy_settings_of_the_guide_pass_check_deploy() -> None:
    env = documented_production_env()
    assert {"DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "DJANGO_CSRF_TRUSTED_ORIGINS"} <= set(env)
    # The guide reads the key from a secret store and names real servers: stand in for those.
    env.update(
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL="sqlite:///:memory:",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/15",
    )
    done = check_deploy(env)
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def test_deploy_settings_without_a_secret_key_warn_of_the_generated_one(tmp_path: Path) -> None:
    env = documented_production_env()
    env.pop("DJANGO_SECRET_KEY")
    env.update(DATABASE_URL="sqlite:///:memory:", FANFOLD_VAR_DIR=str(tmp_path))
    done = check_deploy(env)
    assert done.returncode != 0  # --fail-level WARNING
    assert "fanfold.W006" in done.stderr and "fanfold.E003" not in done.stderr
    assert (tmp_path / "secret_key").exists()
