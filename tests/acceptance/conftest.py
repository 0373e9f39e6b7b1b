"""Acceptance tests run real workers against the real database: PostgreSQL, released cleanly
at the end of the session."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from tests.support.database import _release_test_database

__all__ = ["_release_test_database"]


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        message = "acceptance tests need PostgreSQL: export DATABASE_URL (scripts/test does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
