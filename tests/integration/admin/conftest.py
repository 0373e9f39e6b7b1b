"""Fixtures for the admin tests: a staff user without any model permission, logged in."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture
def staff_user(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("staff", password="pw-staff-1234", is_staff=True)


@pytest.fixture
def staff_client(client: Client, staff_user: User) -> Client:
    client.force_login(staff_user)
    return client
