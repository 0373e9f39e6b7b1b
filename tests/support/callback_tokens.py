"""Callback tokens of the earlier form, as users of callbacks created before still hold them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid


def earlier_form(secret: bytes, step_id: uuid.UUID) -> str:
    """A token as callbacks were given before tokens named their run: the MAC alone."""
    mac = hmac.new(secret, b"fanfold-callback-token:" + step_id.bytes, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
