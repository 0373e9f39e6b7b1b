"""Fixtures for the admin tests: a staff operator (the runtime's model permissions), logged in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client

from runtime.testing import use_writer
from tests.support.users import operator


@pytest.fixture
def staff_user(django_user_model: type[User]) -> User:
    return operator("staff", password="pw-staff-1234", is_staff=True)


@pytest.fixture
def staff_client(client: Client, staff_user: User) -> Client:
    client.force_login(staff_user)
    return client


@pytest.fixture(autouse=True)
def _process_writer() -> Iterator[None]:
    """Cancelling goes through the checkpoint writer thread: a fresh one per test."""
    with use_writer():
        yield
