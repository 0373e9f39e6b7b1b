"""FANFOLD_PAYLOAD_KEYS: Fernet keys, the first of which encrypts and all of which decrypt."""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, MultiFernet

from runtime.core.payload_errors import PayloadKeyInvalid


def fernets(keys: Sequence[str]) -> list[Fernet]:
    """One Fernet per key, in order; raises PayloadKeyInvalid naming the bad key's position.

    The message never quotes a key: settings errors end up in logs and `manage.py check`.
    """
    found = []
    for position, key in enumerate(keys, start=1):
        try:
            found.append(Fernet(key.strip()))
        except (ValueError, TypeError, AttributeError):
            raise PayloadKeyInvalid(
                f"FANFOLD_PAYLOAD_KEYS: key {position} of {len(keys)} is not a Fernet key "
                "(32 url-safe base64-encoded bytes, as Fernet.generate_key() makes)"
            ) from None
    return found


def cipher(keys: Sequence[str]) -> MultiFernet | None:
    """The MultiFernet of the keys (encrypts with the first, decrypts with any), or None."""
    return MultiFernet(fernets(keys)) if keys else None


def generate_key() -> str:
    """A new random payload key, as text to put first in FANFOLD_PAYLOAD_KEYS."""
    return Fernet.generate_key().decode("ascii")
