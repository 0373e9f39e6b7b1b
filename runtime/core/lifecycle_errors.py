"""Typed errors of the data lifecycle: archives and restores."""

from __future__ import annotations

from runtime.core.errors import FanfoldError


class ArchiveStorageMissing(FanfoldError):
    """An archive was asked for and STORAGES["fanfold_archive"] is not configured."""

    code = "archive_storage_missing"


class ArchiveNotFound(FanfoldError):
    """No archive document of that run is in the archive storage."""

    code = "archive_not_found"


class ArchiveUnreadable(FanfoldError):
    """An archive document is not one this version wrote."""

    code = "archive_unreadable"


class RunExists(FanfoldError):
    """A restore of a run whose id is already in the database (nothing is overwritten)."""

    code = "run_exists"
