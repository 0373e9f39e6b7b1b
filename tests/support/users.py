"""Users for the API and admin tests: operators hold the runtime's model permissions."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission, User

# What an operator may do (contract 2e): start, see and change every run, pause schedules.
OPERATOR_PERMISSIONS = (
    "add_run",
    "view_run",
    "change_run",
    "view_schedule",
    "change_schedule",
    "view_concurrencyslot",
)


def grant(user: User, *codenames: str) -> User:
    """Give `user` these `runtime` permissions; returns the user fresh (permission caches)."""
    perms = Permission.objects.filter(content_type__app_label="runtime", codename__in=codenames)
    if perms.count() != len(set(codenames)):
        raise LookupError(f"unknown runtime permissions among {codenames}")
    user.user_permissions.add(*perms)
    return User.objects.get(pk=user.pk)


def operator(username: str, **fields: Any) -> User:
    """A user with every permission an operator of Fanfold needs."""
    return grant(User.objects.create_user(username, **fields), *OPERATOR_PERMISSIONS)


def starter(username: str, **fields: Any) -> User:
    """A user who may start runs (runtime.add_run) and nothing more: sees only their own."""
    return grant(User.objects.create_user(username, **fields), "add_run")
