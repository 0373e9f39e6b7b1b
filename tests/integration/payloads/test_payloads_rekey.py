"""rekey: stored payloads moved to the first payload key, inline and offloaded alike."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.core.payload_errors import PayloadKeysMissing, PayloadKeyUnknown
from runtime.core.payload_keys import generate_key
from runtime.payloads.codec import ENCRYPTED, OFFLOADED, PayloadCodec, reserved_form
from runtime.payloads.offload import delete_offloaded
from runtime.payloads.packing import pack, rekey, unpack

Override = Callable[..., None]
OLD, NEW = generate_key(), generate_key()
BIG = {"blob": "r" * 400_000}


def test_rekey_leaves_values_on_the_first_key_alone(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[NEW, OLD])
    run_id = uuid.uuid4()
    for value in ({"small": 1}, BIG):
        stored = pack(value, run_id)
        assert rekey(stored, run_id).stored is stored
        assert rekey(stored, run_id).replaced is None


def test_rekey_moves_an_inline_value_to_the_first_key(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[OLD])
    run_id = uuid.uuid4()
    stored = pack({"small": 1}, run_id)
    fanfold_settings(PAYLOAD_KEYS=[NEW, OLD])
    rekeyed = rekey(stored, run_id)
    assert rekeyed.replaced is None and reserved_form(rekeyed.stored) == ENCRYPTED
    assert PayloadCodec([NEW]).decode(rekeyed.stored) == {"small": 1}


def test_rekey_moves_an_offloaded_value_to_a_new_file_and_names_the_old(
    fanfold_settings: Override,
    run_files: Callable[[object], list[str]],
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[OLD])
    run_id = uuid.uuid4()
    stored = pack(BIG, run_id)
    fanfold_settings(PAYLOAD_KEYS=[NEW, OLD])
    rekeyed = rekey(stored, run_id)
    assert rekeyed.replaced == stored[OFFLOADED]["name"]
    assert rekeyed.stored[OFFLOADED]["name"] != rekeyed.replaced
    delete_offloaded(rekeyed.replaced)  # what the command does once the row is committed
    assert len(run_files(run_id)) == 1
    fanfold_settings(PAYLOAD_KEYS=[NEW])  # the old key can go now
    assert unpack(rekeyed.stored) == BIG


def test_rekey_encrypts_plain_values_once_keys_are_set(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    run_id = uuid.uuid4()
    small, large = pack({"small": 1}, run_id), pack(BIG, run_id)
    fanfold_settings(PAYLOAD_KEYS=[NEW])
    assert reserved_form(rekey(small, run_id).stored) == ENCRYPTED
    rekeyed = rekey(large, run_id)
    assert rekeyed.replaced == large[OFFLOADED]["name"]
    assert unpack(rekeyed.stored) == BIG


def test_rekey_moves_a_value_whose_ciphertext_outgrows_the_threshold_to_a_file(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(OFFLOAD_BYTES=1100)
    run_id = uuid.uuid4()
    stored = pack({"text": "y" * 1000}, run_id)
    fanfold_settings(OFFLOAD_BYTES=1100, PAYLOAD_KEYS=[NEW])
    rekeyed = rekey(stored, run_id)
    assert reserved_form(rekeyed.stored) == OFFLOADED and rekeyed.replaced is None


def test_rekey_refuses_values_it_cannot_read(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[OLD])
    stored = pack(BIG, uuid.uuid4())
    fanfold_settings(PAYLOAD_KEYS=[NEW])
    with pytest.raises(PayloadKeyUnknown):
        rekey(stored, uuid.uuid4())
    fanfold_settings(PAYLOAD_KEYS=[])
    with pytest.raises(PayloadKeysMissing):
        rekey(stored, uuid.uuid4())
