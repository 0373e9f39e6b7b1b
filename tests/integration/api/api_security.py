"""Two users for the security tests: `alice` owns runs, `bob` attacks them (names "tests.api.")."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.support.users import grant, starter


def client_of(user: User) -> APIClient:
    """An API client authenticated as `user`."""
    api = APIClient()
    api.force_authenticate(user)
    return api


def users(*extra_for_bob: str) -> tuple[User, User]:
    """alice and bob, who may both start runs; bob also holds `extra_for_bob` permissions."""
    alice = starter("alice")
    bob = starter("bob")
    return alice, grant(bob, *extra_for_bob) if extra_for_bob else bob


def post(client: APIClient, url: str, body: Any = None, **extra: Any) -> Any:
    return client.post(url, json.dumps(body or {}), content_type="application/json", **extra)


def start(client: APIClient, workflow: str, *args: Any, **body: Any) -> Any:
    return post(client, "/api/runs/", {"workflow": workflow, "args": list(args), **body})
