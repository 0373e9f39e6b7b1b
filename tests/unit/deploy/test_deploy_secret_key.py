"""The demo project's secret key without DJANGO_SECRET_KEY: made once into var/, kept secret."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from bench.workers import ROOT
from config.secret_key import read_or_create


def test_deploy_secret_key_is_made_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "var" / "secret_key"
    key = read_or_create(path)
    assert len(key) >= 50 and not key.startswith("django-insecure-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_or_create(path) == key
    assert [p.name for p in path.parent.iterdir()] == ["secret_key"]  # no temporary left


def test_deploy_secret_key_processes_starting_together_agree(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"
    with ProcessPoolExecutor(4) as pool:
        keys = set(pool.map(read_or_create, [path] * 16))
    assert keys == {path.read_text().strip()}


def test_deploy_secret_key_refuses_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"
    path.write_text("\n")
    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECRET_KEY"):
        read_or_create(path)


def test_deploy_secret_key_unwritable_folder_says_what_to_set(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(ImproperlyConfigured, match="set DJANGO_SECRET_KEY"):
        read_or_create(blocker / "secret_key")


def settings_key(env: dict[str, str]) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "FANFOLD_"))}
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_deploy_secret_key_environment_wins_over_the_file(tmp_path: Path) -> None:
    var = {"FANFOLD_VAR_DIR": str(tmp_path), "DATABASE_URL": "sqlite:///:memory:"}
    generated = settings_key(var)
    assert generated == (tmp_path / "secret_key").read_text().strip()
    assert settings_key(var) == generated
    assert settings_key({**var, "DJANGO_SECRET_KEY": "k" * 60}) == "k" * 60
