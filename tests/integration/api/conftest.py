"""API tests: real Postgres, DRF's test client, enqueueing recorded and executions driven by
hand with a FakeClock (the checkpoint writer commits from its own thread, hence
`transactional_db`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runtime import conf
from runtime.core.clock import FakeClock
from runtime.testing import use_dispatcher
from tests.support.dispatch import RecordingDispatcher
from tests.support.users import operator

Enqueued = list[tuple[uuid.UUID, float | None]]


@pytest.fixture(autouse=True)
def _fresh_state(transactional_db: Any) -> Iterator[None]:
    cache.clear()  # throttling counts
    conf.reset()
    yield
    conf.reset()


@pytest.fixture
def enqueued() -> Iterator[Enqueued]:
    with use_dispatcher(RecordingDispatcher()) as dispatcher:
        assert isinstance(dispatcher, RecordingDispatcher)
        yield dispatcher.enqueued.calls


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def user() -> User:
    """An operator: may start, see and change every run, and pause schedules."""
    return operator("ada", password="pw-ada-123")


@pytest.fixture
def token(user: User) -> str:
    return Token.objects.create(user=user).key


@pytest.fixture
def client(token: str, enqueued: Enqueued) -> APIClient:
    """Authenticated with a DRF token."""
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return api


@pytest.fixture
def anon(enqueued: Enqueued) -> APIClient:
    return APIClient()


@pytest.fixture
def small_payloads(settings: Any) -> int:
    """FANFOLD_MAX_PAYLOAD_BYTES of 200."""
    settings.FANFOLD = {**settings.FANFOLD, "MAX_PAYLOAD_BYTES": 200}
    conf.reset()
    return 200
