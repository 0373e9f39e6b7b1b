"""The stored form of a JSON value: encrypted with the payload keys, or escaped plain JSON.

Every stored form is itself a JSON value (the columns are JSON, and the PostgreSQL fast path
sends rows as JSON documents). Fanfold's own forms are objects with exactly one key that
starts with `$ff:`:

- `{"$ff:enc": "<Fernet token>"}`: the value's compact UTF-8 JSON, encrypted;
- `{"$ff:esc": <value>}`: a user value that is itself a one-key object with a `$ff:` key;
- `{"$ff:ref": {"name": ..., "bytes": ...}}`: a value kept in the payload storage
  (runtime.payloads.packing reads those; this codec only recognises them).

Any other JSON value is a plain value and stands for itself. With keys configured every
value is written encrypted (there is no plain write then), while plain values written before
the keys were set still read back as they are: that is the way in, and rotating them
encrypts them. `null` stays `null`, so that a missing value and a null one read as before.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from runtime.core.json_text import compact_json
from runtime.core.payload_errors import PayloadFormatUnknown, PayloadKeysMissing, PayloadKeyUnknown
from runtime.core.payload_keys import fernets

RESERVED_PREFIX = "$ff:"
# In a JSON text, every stored form other than a plain value has this: a text without it
# holds plain values only.
STORED_FORM_MARK = '"$ff:'
ENCRYPTED = "$ff:enc"
ESCAPED = "$ff:esc"
OFFLOADED = "$ff:ref"


def reserved_form(stored: Any) -> str | None:
    """The reserved key of a stored form (`"$ff:enc"`, ...), or None for a plain value."""
    if isinstance(stored, dict) and len(stored) == 1:
        key = next(iter(stored))
        if isinstance(key, str) and key.startswith(RESERVED_PREFIX):
            return key
    return None


def json_text(value: Any) -> str:
    """The compact JSON text of a value, as encrypted and as measured against the limits."""
    return compact_json(value)


class PayloadCodec:
    """Encodes JSON values to their stored form and back, with the given payload keys.

    With no keys it writes plain values (escaped where needed) and refuses to read encrypted
    ones; with keys it writes every value encrypted with the first key and reads values
    encrypted with any of them, and plain ones.
    """

    def __init__(self, keys: Sequence[str] = ()) -> None:
        found = fernets(keys)
        self._first: Fernet | None = found[0] if found else None
        self._cipher: MultiFernet | None = MultiFernet(found) if found else None
        # Offloaded files are named by a digest of their value: keyed with a secret derived
        # from the first key when there is one, so a name reveals nothing about the value.
        self._name_key = (
            hashlib.sha256(
                b"fanfold offloaded payload name\x00" + keys[0].strip().encode()
            ).digest()
            if keys
            else None
        )

    @property
    def encrypts(self) -> bool:
        return self._cipher is not None

    def encode(self, value: Any) -> Any:
        """The stored form of a JSON value (already normalized by runtime.core.jsonvalues)."""
        if value is None:
            return None
        if self._cipher is not None:
            token = self._cipher.encrypt(json_text(value).encode("utf-8"))
            return {ENCRYPTED: token.decode("ascii")}
        if reserved_form(value) is not None:
            return {ESCAPED: value}
        return value

    def decode(self, stored: Any) -> Any:
        """The value of a stored form; raises a PayloadUnreadable error rather than guess.

        An encrypted form with no keys configured, or with none that decrypts it, raises
        PayloadKeysMissing or PayloadKeyUnknown: the ciphertext is never returned as a value.
        """
        form = reserved_form(stored)
        if form is None:
            return stored
        if form == ESCAPED:
            return stored[ESCAPED]
        if form == ENCRYPTED:
            return json.loads(self._decrypt(stored[ENCRYPTED]))
        if form == OFFLOADED:
            raise PayloadFormatUnknown(
                "an offloaded payload's reference: read it with runtime.payloads.packing.unpack"
            )
        raise PayloadFormatUnknown(
            f"stored payload has the reserved form {form!r}, which this version cannot read"
        )

    def rotate(self, stored: Any) -> Any:
        """The stored form on the first key, or `stored` itself when it already is.

        An encrypted form on another configured key is re-encrypted with the first; with keys
        configured a plain form is encrypted; with none, a plain form stays as it is. The
        `rekey` command writes back only what this changed (`result is not stored`).
        """
        form = reserved_form(stored)
        if form == ENCRYPTED:
            token = self._token(stored[ENCRYPTED])
            if self._cipher is None or self._first is None:
                raise _keys_missing()
            try:
                self._first.decrypt(token)
                return stored
            except InvalidToken:
                pass
            try:
                return {ENCRYPTED: self._cipher.rotate(token).decode("ascii")}
            except InvalidToken:
                raise _key_unknown() from None
        value = self.decode(stored)  # plain or escaped; raises on other reserved forms
        if self._cipher is None or value is None:
            return stored
        return self.encode(value)

    def name_digest(self, plain_json: str) -> str:
        """The hex digest naming an offloaded file of this value's compact JSON text."""
        data = plain_json.encode("utf-8")
        if self._name_key is None:
            return hashlib.sha256(data).hexdigest()
        return hmac.new(self._name_key, data, hashlib.sha256).hexdigest()

    def _decrypt(self, token_text: Any) -> str:
        token = self._token(token_text)
        if self._cipher is None:
            raise _keys_missing()
        try:
            return self._cipher.decrypt(token).decode("utf-8")
        except InvalidToken:
            raise _key_unknown() from None

    @staticmethod
    def _token(token_text: Any) -> bytes:
        if not isinstance(token_text, str) or not token_text.isascii():
            raise PayloadFormatUnknown("an encrypted payload whose token is not Fernet text")
        return token_text.encode("ascii")


def _keys_missing() -> PayloadKeysMissing:
    return PayloadKeysMissing("payload is encrypted but FANFOLD_PAYLOAD_KEYS is not set")


def _key_unknown() -> PayloadKeyUnknown:
    return PayloadKeyUnknown(
        "payload is encrypted with a key that is not in FANFOLD_PAYLOAD_KEYS "
        "(or its ciphertext is damaged)"
    )
