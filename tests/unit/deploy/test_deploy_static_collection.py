"""fanfold.W012: with DEBUG off and a manifest static storage, `check` names static files that
were never collected, or a collection that lacks files the apps ship, and the command that
fixes it; the worker's and the web process's start log the same."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from runtime.checks import (
    COLLECTSTATIC,
    check_static_files_collected,
    log_static_collection_problems,
)

MANIFEST = "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"


def _storages(backend: str) -> dict[str, dict[str, str]]:
    return {**settings.STORAGES, "staticfiles": {"BACKEND": backend}}


@pytest.fixture
def static_root(tmp_path: Path) -> Iterator[Path]:
    """DEBUG off, Django's manifest storage, an empty STATIC_ROOT of this test's own."""
    with override_settings(DEBUG=False, STATIC_ROOT=tmp_path, STORAGES=_storages(MANIFEST)):
        yield tmp_path


def _found() -> list[tuple[str, str | None]]:
    return [(m.id or "", m.hint) for m in check_static_files_collected()]


def test_deploy_static_check_names_files_never_collected(static_root: Path) -> None:
    [warning] = check_static_files_collected()
    assert warning.id == "fanfold.W012"
    assert f"{static_root}/staticfiles.json is missing" in warning.msg
    assert "/admin/login/" in warning.msg
    assert warning.hint == f"Run `{COLLECTSTATIC}`."


def test_deploy_static_check_is_quiet_once_collected_then_names_a_stale_collection(
    static_root: Path,
) -> None:
    call_command("collectstatic", "--noinput", verbosity=0)
    assert _found() == []

    manifest = static_root / "staticfiles.json"
    collected = json.loads(manifest.read_text())
    del collected["paths"]["admin/css/base.css"]  # as if collected before the file was added
    manifest.write_text(json.dumps(collected))
    [warning] = check_static_files_collected()
    assert "collection is stale: 1 file(s)" in warning.msg
    assert "'admin/css/base.css'" in warning.msg
    assert warning.hint == f"Run `{COLLECTSTATIC}`."


def test_deploy_static_check_is_quiet_with_debug_or_without_a_manifest(tmp_path: Path) -> None:
    with override_settings(DEBUG=True, STATIC_ROOT=tmp_path, STORAGES=_storages(MANIFEST)):
        assert _found() == []
    plain = _storages("django.contrib.staticfiles.storage.StaticFilesStorage")
    with override_settings(DEBUG=False, STATIC_ROOT=tmp_path, STORAGES=plain):
        assert _found() == []


def test_deploy_static_check_is_logged_at_a_process_start(
    static_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="fanfold.checks"):
        log_static_collection_problems("Worker")
    [record] = caplog.records
    assert record.getMessage().startswith("Worker start: The static files are not")
    assert COLLECTSTATIC in record.getMessage()
