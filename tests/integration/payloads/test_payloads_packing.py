"""pack and unpack with the payload storage: offload over FANFOLD_OFFLOAD_BYTES, encryption."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import settings as hypothesis_settings

from runtime.core.jsonvalues import encoded_size
from runtime.core.payload_errors import (
    OffloadedPayloadDamaged,
    OffloadedPayloadMissing,
    OffloadStorageMissing,
    PayloadFormatUnknown,
    PayloadKeysMissing,
)
from runtime.core.payload_keys import generate_key
from runtime.payloads.codec import ENCRYPTED, ESCAPED, OFFLOADED, PayloadCodec, reserved_form
from runtime.payloads.offload import delete_run_payloads
from runtime.payloads.packing import pack, unpack
from tests.support.json_values import json_values

Override = Callable[..., None]
KEY = generate_key()
# Fixtures that hold for every example: the settings and the storage folder do not change.
per_test_fixtures = hypothesis_settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)


def big_value(size: int = 600_000) -> dict[str, Any]:
    return {"blob": "x" * size, "n": 1}


def through_a_column(stored: Any) -> Any:
    return json.loads(json.dumps(stored))


@pytest.mark.parametrize("keys", [(), (KEY,)])
@per_test_fixtures
@given(value=json_values())
def test_pack_round_trips_any_json_value_below_and_above_the_threshold(
    fanfold_settings: Override, payload_folder: Path, keys: tuple[str, ...], value: Any
) -> None:
    fanfold_settings(OFFLOAD_BYTES=64, PAYLOAD_KEYS=list(keys))
    stored = pack(value, uuid.uuid4())
    event("offloaded" if reserved_form(stored) == OFFLOADED else "in the row")
    assert unpack(through_a_column(stored)) == value
    if keys and value is not None:
        assert reserved_form(stored) in (ENCRYPTED, OFFLOADED)  # never plain with keys set


@pytest.mark.parametrize("keys", [(), (KEY,)])
def test_pack_keeps_a_600_kb_value_out_of_the_row(
    fanfold_settings: Override,
    run_files: Callable[[object], list[str]],
    keys: tuple[str, ...],
) -> None:
    fanfold_settings(PAYLOAD_KEYS=list(keys))
    run_id, value = uuid.uuid4(), big_value()
    stored = pack(value, run_id)
    assert reserved_form(stored) == OFFLOADED
    assert encoded_size(stored) < 200
    [name] = run_files(run_id)
    assert stored[OFFLOADED]["name"] == f"{run_id}/{name}"
    assert unpack(through_a_column(stored)) == value


def test_pack_encrypts_offloaded_files_with_keys_set(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[KEY])
    stored = pack({"secret": "needle-in-the-file" * 20_000}, uuid.uuid4())
    content = (payload_folder / stored[OFFLOADED]["name"]).read_text()
    assert "needle" not in content
    assert reserved_form(json.loads(content)) == ENCRYPTED


def test_pack_writes_the_same_value_of_a_run_once(
    fanfold_settings: Override, run_files: Callable[[object], list[str]]
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[KEY])
    run_id, other_run = uuid.uuid4(), uuid.uuid4()
    first = pack(big_value(), run_id)
    assert pack(big_value(), run_id) == first
    assert len(run_files(run_id)) == 1
    assert pack(big_value(), other_run)[OFFLOADED]["name"].startswith(f"{other_run}/")
    pack(big_value(300_000), run_id)
    assert len(run_files(run_id)) == 2


def test_pack_measures_the_stored_form_ciphertext_included(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    value = {"text": "y" * 1000}
    fanfold_settings(OFFLOAD_BYTES=1100)
    assert pack(value, uuid.uuid4()) == value
    fanfold_settings(OFFLOAD_BYTES=1100, PAYLOAD_KEYS=[KEY])
    assert reserved_form(pack(value, uuid.uuid4())) == OFFLOADED  # ~1,400 bytes of token


def test_pack_uses_the_size_the_caller_measured(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(OFFLOAD_BYTES=100)
    value = {"a": "b"}
    assert pack(value, uuid.uuid4(), size=encoded_size(value)) is value
    assert reserved_form(pack(value, uuid.uuid4(), size=101)) == OFFLOADED


def test_pack_escapes_reserved_shapes_on_both_sides_of_the_threshold(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(OFFLOAD_BYTES=1000)
    small, large = {OFFLOADED: {"name": "x", "bytes": 1}}, {ESCAPED: "z" * 2000}
    assert pack(small, uuid.uuid4()) == {ESCAPED: small}
    assert unpack(pack(small, uuid.uuid4())) == small
    stored = pack(large, uuid.uuid4())
    assert reserved_form(stored) == OFFLOADED and unpack(stored) == large


def test_pack_keeps_every_value_in_the_row_with_offload_off(
    fanfold_settings: Override, settings: Any
) -> None:
    settings.STORAGES = {k: v for k, v in settings.STORAGES.items() if k != "fanfold_payloads"}
    fanfold_settings(OFFLOAD_BYTES=0, PAYLOAD_KEYS=[KEY])
    stored = pack(big_value(), uuid.uuid4())
    assert reserved_form(stored) == ENCRYPTED
    assert unpack(stored) == big_value()


def test_pack_without_the_payload_storage_keeps_a_large_value_inline(
    fanfold_settings: Override, settings: Any, payload_folder: Path
) -> None:
    # fanfold.W004 warns of it; a project upgraded without the storage keeps working.
    reference = pack(big_value(), uuid.uuid4())
    settings.STORAGES = {k: v for k, v in settings.STORAGES.items() if k != "fanfold_payloads"}
    stored = pack(big_value(), uuid.uuid4())
    assert reserved_form(stored) != OFFLOADED and unpack(stored) == big_value()
    # A reference written while the storage was there cannot be read without it: a clear error.
    with pytest.raises(OffloadStorageMissing, match='STORAGES\\["fanfold_payloads"\\]'):
        unpack(reference)


def test_pack_stores_null_as_null(fanfold_settings: Override) -> None:
    fanfold_settings(PAYLOAD_KEYS=[KEY], OFFLOAD_BYTES=1)
    assert pack(None, uuid.uuid4()) is None
    assert unpack(None) is None


def test_unpack_of_a_missing_file_is_a_clear_error(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    stored = pack(big_value(), uuid.uuid4())
    (payload_folder / stored[OFFLOADED]["name"]).unlink()
    with pytest.raises(OffloadedPayloadMissing) as raised:
        unpack(stored)
    assert stored[OFFLOADED]["name"] in str(raised.value)
    assert raised.value.code == "offloaded_payload_missing"


def test_unpack_of_a_truncated_file_is_a_clear_error(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    stored = pack(big_value(), uuid.uuid4())
    path = payload_folder / stored[OFFLOADED]["name"]
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(OffloadedPayloadDamaged, match="has 1000 bytes"):
        unpack(stored)


@pytest.mark.parametrize(
    "target",
    [
        {"name": "../../etc/passwd", "bytes": 10},
        {"name": f"{uuid.uuid4()}/../x.json", "bytes": 10},
        {"name": f"{uuid.uuid4()}/{'a' * 64}.json"},
        "a name alone",
    ],
)
def test_unpack_refuses_references_it_did_not_write(payload_folder: Path, target: Any) -> None:
    with pytest.raises(PayloadFormatUnknown):
        unpack({OFFLOADED: target})


def test_unpack_of_an_encrypted_offloaded_value_needs_the_keys(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[KEY])
    stored = pack(big_value(), uuid.uuid4())
    fanfold_settings(PAYLOAD_KEYS=[])
    with pytest.raises(PayloadKeysMissing):
        unpack(stored)


def test_unpack_reads_plain_offloaded_values_once_keys_are_set(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    stored = pack(big_value(), uuid.uuid4())
    fanfold_settings(PAYLOAD_KEYS=[KEY])
    assert unpack(stored) == big_value()


def test_delete_run_payloads_deletes_that_runs_files_only(
    fanfold_settings: Override, payload_folder: Path
) -> None:
    doomed, kept = uuid.uuid4(), uuid.uuid4()
    pack(big_value(), doomed)
    pack(big_value(300_000), doomed)
    survivor = pack(big_value(), kept)
    assert delete_run_payloads(doomed) == 2
    assert not (payload_folder / str(doomed)).exists()
    assert unpack(survivor) == big_value()
    assert delete_run_payloads(doomed) == 0
    assert delete_run_payloads(uuid.uuid4()) == 0


def test_packed_values_are_readable_by_the_codec_of_the_same_keys(
    fanfold_settings: Override,
) -> None:
    fanfold_settings(PAYLOAD_KEYS=[KEY])
    assert PayloadCodec([KEY]).decode(pack([1, 2], uuid.uuid4())) == [1, 2]
