"""Typed errors of stored payloads: keys that are missing or wrong, offloaded files gone."""

from __future__ import annotations

from runtime.core.errors import FanfoldError


class PayloadKeyInvalid(FanfoldError, ValueError):
    """A configured payload key is not a Fernet key. The message names its position only."""

    code = "payload_key_invalid"


class PayloadUnreadable(FanfoldError):
    """A stored payload cannot be turned back into its value. Never returned as data."""

    code = "payload_unreadable"


class PayloadKeysMissing(PayloadUnreadable):
    """A stored payload is encrypted and no payload key is configured."""

    code = "payload_keys_missing"


class PayloadKeyUnknown(PayloadUnreadable):
    """No configured payload key decrypts a stored payload (or its ciphertext is damaged)."""

    code = "payload_key_unknown"


class PayloadFormatUnknown(PayloadUnreadable):
    """A stored payload has a reserved shape this version does not read."""

    code = "payload_format_unknown"


class OffloadedPayloadMissing(PayloadUnreadable):
    """The file an offloaded payload's reference names is not in the payload storage."""

    code = "offloaded_payload_missing"


class OffloadedPayloadDamaged(PayloadUnreadable):
    """The file an offloaded payload's reference names is not what was written."""

    code = "offloaded_payload_damaged"


class OffloadStorageMissing(FanfoldError):
    """A payload must go to `STORAGES["fanfold_payloads"]` and that storage is not configured."""

    code = "offload_storage_missing"
