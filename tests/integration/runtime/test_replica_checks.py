"""`manage.py check` on FANFOLD_READ_DATABASE: an alias DATABASES lacks or the default one
(E020), no router sending reads there (E021), and, with `--database`, a "replica" that is a
primary (E022), as the settings build the alias from FANFOLD_READ_DATABASE_URL."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from django.core.checks import ERROR

from bench.workers import ROOT
from runtime.checks import check_read_replica
from tests.support.replica import PORT

pytestmark = pytest.mark.replica


def ids(messages: list[Any]) -> list[tuple[str, int]]:
    return [(m.id, m.level) for m in messages]


@pytest.mark.parametrize("alias", ["reporting", "default"])
def test_replica_check_alias_must_be_another_database(
    fanfold_settings: Callable[..., None], alias: str
) -> None:
    fanfold_settings(READ_DATABASE=alias)
    found = check_read_replica()
    assert ids(found) == [("fanfold.E020", ERROR)]
    assert repr(alias) in found[0].msg


def test_replica_check_needs_the_router(
    fanfold_settings: Callable[..., None], settings: Any
) -> None:
    fanfold_settings(READ_DATABASE="replica")
    settings.DATABASE_ROUTERS = []
    found = check_read_replica()
    assert ids(found) == [("fanfold.E021", ERROR)]
    assert "runtime.store.replica.ReadReplicaRouter" in (found[0].hint or "")
    settings.DATABASE_ROUTERS = ["runtime.store.replica.ReadReplicaRouter"]
    assert check_read_replica() == []  # without --database the server is not asked


def check_with_read_url(port: int) -> subprocess.CompletedProcess[str]:
    """`manage.py check --database default` with FANFOLD_READ_DATABASE_URL at `port`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("FANFOLD_")}
    env = {
        **base,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
        "FANFOLD_READ_DATABASE_URL": f"postgres://postgres@127.0.0.1:{port}/postgres",
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--database", "default"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_replica_check_refuses_a_primary_and_takes_the_replica() -> None:
    primary = check_with_read_url(5432)
    assert primary.returncode == 1
    assert "fanfold.E022" in primary.stderr and "pg_is_in_recovery() is false" in primary.stderr
    replica = check_with_read_url(PORT)
    assert "fanfold.E02" not in replica.stderr + replica.stdout, replica.stderr
