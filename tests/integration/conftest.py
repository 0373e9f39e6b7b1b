"""Tests of this tier use the real database; release it cleanly at the end of the session."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from runtime import conf
from tests.support.database import _release_test_database

__all__ = ["_release_test_database"]


@pytest.fixture
def fanfold_settings(settings: Any) -> Iterator[Callable[..., None]]:
    """Override `FANFOLD_*` settings for one test (before the first execution)."""

    def override(**values: Any) -> None:
        settings.FANFOLD = {**getattr(settings, "FANFOLD", {}), **values}
        conf.reset()

    yield override
    conf.reset()
