"""The stored form of a payload: encryption with the payload keys, escaping, rotation."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from cryptography.fernet import Fernet
from hypothesis import given

from runtime.core.payload_errors import (
    OffloadedPayloadDamaged,
    OffloadedPayloadMissing,
    OffloadStorageMissing,
    PayloadFormatUnknown,
    PayloadKeyInvalid,
    PayloadKeysMissing,
    PayloadKeyUnknown,
    PayloadUnreadable,
)
from runtime.core.payload_keys import generate_key
from runtime.payloads.codec import (
    ENCRYPTED,
    ESCAPED,
    OFFLOADED,
    PayloadCodec,
    json_text,
    reserved_form,
)
from tests.support.json_values import json_values

OLD, NEW, OTHER = generate_key(), generate_key(), generate_key()
PLAIN = PayloadCodec()
KEYED = PayloadCodec([NEW, OLD])


def through_a_column(stored: Any) -> Any:
    """What a JSON column gives back: the stored form must be JSON itself."""
    return json.loads(json.dumps(stored, allow_nan=False))


@given(json_values())
def test_codec_round_trips_any_json_value_without_keys(value: Any) -> None:
    assert PLAIN.decode(through_a_column(PLAIN.encode(value))) == value


@given(json_values())
def test_codec_round_trips_any_json_value_with_keys(value: Any) -> None:
    stored = KEYED.encode(value)
    assert value is None or reserved_form(stored) == ENCRYPTED  # never a plain write
    assert KEYED.decode(through_a_column(stored)) == value


@pytest.mark.parametrize(
    "value",
    [
        {ENCRYPTED: "gAAAAA-not-a-token"},
        {ESCAPED: 1},
        {ESCAPED: {ESCAPED: None}},
        {OFFLOADED: {"name": "x", "bytes": 1}},
        {"$ff:": []},
        {"$ff:later": "a form of a later version"},
    ],
)
def test_codec_escapes_user_values_shaped_like_a_stored_form(value: Any) -> None:
    stored = PLAIN.encode(value)
    assert stored == {ESCAPED: value}
    assert PLAIN.decode(through_a_column(stored)) == value
    assert KEYED.decode(KEYED.encode(value)) == value


@pytest.mark.parametrize(
    "value", [{"$ff:enc": 1, "b": 2}, {"$FF:enc": 1}, {"ff:enc": 1}, [{ENCRYPTED: 1}], "$ff:enc"]
)
def test_codec_stores_other_values_as_they_are(value: Any) -> None:
    assert PLAIN.encode(value) is value
    assert PLAIN.decode(value) is value


def test_codec_stores_null_as_null_with_keys_too() -> None:
    assert KEYED.encode(None) is None
    assert KEYED.decode(None) is None


def test_codec_reads_values_of_every_configured_key() -> None:
    stored = PayloadCodec([OLD]).encode({"n": 1})
    assert KEYED.decode(stored) == {"n": 1}
    assert PayloadCodec([OTHER, OLD]).decode(stored) == {"n": 1}


def test_codec_reads_plain_values_once_keys_are_configured() -> None:
    assert KEYED.decode({"written": "before the keys"}) == {"written": "before the keys"}
    assert KEYED.decode(PLAIN.encode({ESCAPED: 1})) == {ESCAPED: 1}


def test_codec_without_keys_refuses_an_encrypted_value() -> None:
    stored = KEYED.encode("secret")
    with pytest.raises(PayloadKeysMissing) as raised:
        PLAIN.decode(stored)
    assert str(raised.value) == "payload is encrypted but FANFOLD_PAYLOAD_KEYS is not set"
    assert raised.value.code == "payload_keys_missing"


def test_codec_with_other_keys_refuses_an_encrypted_value_naming_no_key() -> None:
    stored = KEYED.encode("secret")
    with pytest.raises(PayloadKeyUnknown) as raised:
        PayloadCodec([OTHER]).decode(stored)
    message = str(raised.value)
    assert "not in FANFOLD_PAYLOAD_KEYS" in message
    assert all(key not in message for key in (OLD, NEW, OTHER))
    assert raised.value.code == "payload_key_unknown"


@pytest.mark.parametrize("token", [42, None, "not a token", "gAAAAAé"])
def test_codec_refuses_a_damaged_encrypted_value(token: Any) -> None:
    with pytest.raises(PayloadUnreadable):
        KEYED.decode({ENCRYPTED: token})


@pytest.mark.parametrize(
    ("stored", "fragment"),
    [
        ({"$ff:later": 1}, "reserved form '$ff:later'"),
        ({OFFLOADED: {"name": "a", "bytes": 1}}, "runtime.payloads.packing.unpack"),
    ],
)
def test_codec_refuses_reserved_forms_it_does_not_read(stored: Any, fragment: str) -> None:
    with pytest.raises(PayloadFormatUnknown) as raised:
        KEYED.decode(stored)
    assert fragment in str(raised.value)


def test_codec_rotate_leaves_values_on_the_first_key_alone() -> None:
    stored = KEYED.encode([1, 2])
    assert KEYED.rotate(stored) is stored


def test_codec_rotate_moves_values_of_an_older_key_to_the_first() -> None:
    stored = PayloadCodec([OLD]).encode([1, 2])
    rotated = KEYED.rotate(stored)
    assert reserved_form(rotated) == ENCRYPTED and rotated != stored
    assert PayloadCodec([NEW]).decode(rotated) == [1, 2]  # the first key alone reads it
    assert KEYED.rotate(rotated) is rotated


def test_codec_rotate_encrypts_plain_values_once_keys_are_configured() -> None:
    rotated = KEYED.rotate({ESCAPED: {ENCRYPTED: 1}})
    assert reserved_form(rotated) == ENCRYPTED
    assert PayloadCodec([NEW]).decode(rotated) == {ENCRYPTED: 1}
    assert KEYED.rotate(None) is None


def test_codec_rotate_without_keys_leaves_plain_values_alone() -> None:
    value = {"a": 1}
    assert PLAIN.rotate(value) is value


def test_codec_rotate_refuses_what_it_cannot_read() -> None:
    with pytest.raises(PayloadKeysMissing):
        PLAIN.rotate(KEYED.encode(1))
    with pytest.raises(PayloadKeyUnknown):
        PayloadCodec([OTHER]).rotate(KEYED.encode(1))


def test_codec_name_digest_is_keyed_by_the_first_key_only() -> None:
    text = json_text({"big": "value"})
    assert PLAIN.name_digest(text) == PLAIN.name_digest(text)
    assert KEYED.name_digest(text) == PayloadCodec([NEW]).name_digest(text)
    assert (
        len(
            {
                PLAIN.name_digest(text),
                KEYED.name_digest(text),
                PayloadCodec([OLD]).name_digest(text),
            }
        )
        == 3
    )


def test_codec_refuses_a_malformed_key_naming_its_position_not_its_text() -> None:
    bad = "this-is-not-a-fernet-key"
    with pytest.raises(PayloadKeyInvalid) as raised:
        PayloadCodec([NEW, bad])
    assert "key 2 of 2 is not a Fernet key" in str(raised.value)
    assert bad not in str(raised.value) and NEW not in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_codec_takes_keys_with_surrounding_blanks() -> None:
    key = Fernet.generate_key().decode()
    assert PayloadCodec([f" {key}\n"]).decode(PayloadCodec([key]).encode(1)) == 1


@pytest.mark.parametrize(
    ("error_type", "code"),
    [
        (PayloadKeyInvalid, "payload_key_invalid"),
        (PayloadUnreadable, "payload_unreadable"),
        (PayloadKeysMissing, "payload_keys_missing"),
        (PayloadKeyUnknown, "payload_key_unknown"),
        (PayloadFormatUnknown, "payload_format_unknown"),
        (OffloadedPayloadMissing, "offloaded_payload_missing"),
        (OffloadedPayloadDamaged, "offloaded_payload_damaged"),
        (OffloadStorageMissing, "offload_storage_missing"),
    ],
)
def test_payload_errors_have_stable_codes_and_pickle(
    error_type: type[Exception], code: str
) -> None:
    error = error_type("what happened")
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.code) == (error_type, "what happened", code)  # type: ignore[attr-defined]
