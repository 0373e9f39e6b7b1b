"""The callback endpoint's optional user: the token is the credential, a user is only noted."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import (
    BaseAuthentication,
    SessionAuthentication,
    TokenAuthentication,
)
from rest_framework.request import Request


class OptionalUserAuthentication(BaseAuthentication):
    """The user of a valid DRF token or session, if the request carries one; never refuses.

    A callback post is allowed by its callback token alone; when a signed-in user posts it,
    the run's log records who (`by`). A bad user token or a session post without its CSRF
    token counts as no user, never as a refusal: `Authorization: Bearer` is the callback
    token, which DRF's `Token` scheme leaves alone.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        for scheme in (TokenAuthentication(), SessionAuthentication()):
            try:
                found = scheme.authenticate(request)
            except exceptions.APIException:
                continue
            if found is not None:
                return found
        return None
