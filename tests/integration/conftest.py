"""Tests of this tier use the real database; release it cleanly at the end of the session."""

from __future__ import annotations

from tests.support.database import _release_test_database

__all__ = ["_release_test_database"]
