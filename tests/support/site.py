"""A newcomer's own site, built from docs/add-to-your-project.md and nothing else.

`django-admin startproject mysite`, `startapp shop`, then every file the page writes (or
appends to), exactly as the page shows it. The docs tier checks the result with the
repository's environment; the packaging test runs it, workers and gunicorn included, from the
installed wheel.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

from bench.workers import ROOT
from tests.docs.examples import site_files

PAGE = ROOT / "docs" / "add-to-your-project.md"


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    """Run a command; its stdout, or an AssertionError that shows both of its outputs."""
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {done.returncode}\n"
            f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
        )
    return done.stdout


def clean_env() -> dict[str, str]:
    """This environment without anything of the repository's own settings or virtualenv."""
    drop = ("DJANGO_", "FANFOLD_", "DATABASE_URL", "CELERY_", "VIRTUAL_ENV", "PYTHONPATH")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def site_env(database_url: str, broker_url: str, **extra: str) -> dict[str, str]:
    """The variables the page's settings read, as an operator would export them."""
    env = clean_env()
    env.update(
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        **extra,
    )
    return env


def build_site(python: str, site: Path) -> None:
    """startproject and startapp with `python`'s Django, then the page's files."""
    site.mkdir(parents=True, exist_ok=True)
    env = clean_env()
    run([python, "-m", "django", "startproject", "mysite", str(site)], site, env)
    run([python, "manage.py", "startapp", "shop"], site, env)
    files = site_files(PAGE)
    if not files:
        raise AssertionError(f"{PAGE.name} writes no files")
    for file in files:
        target = site / file.path
        if file.append:
            with target.open("a") as existing:
                existing.write("\n" + file.code)
        else:
            target.write_text(file.code)
