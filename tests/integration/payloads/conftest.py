"""The payload storage of these tests: a fresh folder per test, named by pytest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import storages

PAYLOADS = "fanfold_payloads"


@pytest.fixture
def payload_folder(settings: Any, tmp_path: Path) -> Path:
    """STORAGES["fanfold_payloads"] in this test's temporary folder (Django's setting_changed
    receiver forgets the storages built before)."""
    folder = tmp_path / "payloads"
    settings.STORAGES = {
        **settings.STORAGES,
        PAYLOADS: {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": folder},
        },
    }
    assert Path(storages[PAYLOADS].location) == folder
    return folder


@pytest.fixture
def run_files(payload_folder: Path) -> Callable[[object], list[str]]:
    """The names of a run's offloaded files, sorted."""

    def names(run_id: object) -> list[str]:
        run_folder = payload_folder / str(run_id)
        return sorted(p.name for p in run_folder.iterdir()) if run_folder.exists() else []

    return names
