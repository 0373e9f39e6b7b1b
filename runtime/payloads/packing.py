"""`pack` and `unpack`: the one seam between a JSON value and what its database column holds.

`pack` encodes a value with the configured payload keys (runtime.payloads.codec) and, when the
stored form is larger than FANFOLD_OFFLOAD_BYTES, writes that stored form to the payload
storage (runtime.payloads.offload) and returns a reference instead:
`{"$ff:ref": {"name": "<run id>/<digest>.json", "bytes": <file size>}}`. The size is measured
on the stored form, ciphertext included, because that is what the row would hold. `unpack`
reads any stored form back into its value. Plain JSON that is no reserved form costs one
type check each way when no keys are configured.
"""

from __future__ import annotations

import json
import uuid
from functools import lru_cache
from typing import Any, NamedTuple

from runtime import conf
from runtime.core.jsonvalues import encoded_size
from runtime.core.payload_errors import PayloadFormatUnknown
from runtime.payloads.codec import OFFLOADED, PayloadCodec, json_text, reserved_form
from runtime.payloads.offload import has_payload_storage, read_offloaded, write_offloaded


@lru_cache(maxsize=4)
def codec_for(keys: tuple[str, ...]) -> PayloadCodec:
    """The codec of these payload keys, built once (a Fernet per key)."""
    return PayloadCodec(keys)


def current_codec() -> PayloadCodec:
    """The codec of the configured FANFOLD_PAYLOAD_KEYS (for broker arguments, say)."""
    return codec_for(conf.get().PAYLOAD_KEYS)


def pack(value: Any, run_id: uuid.UUID, size: int | None = None) -> Any:
    """The JSON a column stores for `value`, a value of run `run_id`.

    `value` is already normalized (runtime.core.jsonvalues.checked); `size`, its encoded size
    when the caller measured it, spares measuring it again when the value is stored plain.
    Encrypted when keys are configured; kept in the payload storage when its stored form is
    over FANFOLD_OFFLOAD_BYTES (a file written once per value and run) if the payload storage
    is configured, else inline as it is. `None` stays `None`.
    """
    if value is None:
        return None
    settings = conf.get()
    codec = codec_for(settings.PAYLOAD_KEYS)
    stored = codec.encode(value)
    limit = settings.OFFLOAD_BYTES
    if not limit:
        return stored
    stored_size = size if size is not None and stored is value else encoded_size(stored)
    if stored_size <= limit or not has_payload_storage():
        return stored  # without the storage (check fanfold.W004) a large value stays inline
    return offload(codec, value, stored, run_id)


def offload(codec: PayloadCodec, value: Any, stored: Any, run_id: uuid.UUID) -> dict[str, Any]:
    """Write a stored form to the payload storage; returns the reference a row holds."""
    content = json_text(stored).encode("utf-8")
    name = write_offloaded(run_id, codec.name_digest(json_text(value)), content)
    return {OFFLOADED: {"name": name, "bytes": len(content)}}


def unpack(stored: Any) -> Any:
    """The value a column's stored JSON stands for, whatever `pack` made of it.

    Raises a PayloadUnreadable error (runtime.core.payload_errors), each with a stable code, when
    the value cannot be had: encrypted with no keys or an unknown one, an offloaded file
    missing or damaged, a reserved form this version does not know.
    """
    form = reserved_form(stored)
    if form is None:
        return stored
    codec = current_codec()
    if form == OFFLOADED:
        stored = read_reference(stored)
    return codec.decode(stored)


def read_reference(reference: dict[str, Any]) -> Any:
    """The stored form an offloaded payload's reference points to, as its file holds it."""
    target = reference[OFFLOADED]
    if not (
        isinstance(target, dict)
        and isinstance(target.get("name"), str)
        and type(target.get("bytes")) is int
    ):
        raise PayloadFormatUnknown("an offloaded payload's reference without a name and size")
    content = read_offloaded(target["name"], target["bytes"])
    try:
        stored = json.loads(content)
    except ValueError:
        raise PayloadFormatUnknown(f"offloaded payload {target['name']} is not JSON") from None
    if reserved_form(stored) == OFFLOADED:
        raise PayloadFormatUnknown(f"offloaded payload {target['name']} is another reference")
    return stored


class Rekeyed(NamedTuple):
    """What `rekey` made of a stored form.

    `stored` is the form to write back (the same object when nothing changed); `replaced` names
    the offloaded file the old form referenced, to delete once the new form is committed.
    """

    stored: Any
    replaced: str | None


def rekey(stored: Any, run_id: uuid.UUID) -> Rekeyed:
    """A stored form re-encrypted with the first payload key, for the `rekey` command.

    Values already on the first key come back unchanged (`result.stored is stored`). Others,
    plain values included once keys are set, are packed again, so a value whose ciphertext
    outgrows FANFOLD_OFFLOAD_BYTES moves to the payload storage too.
    """
    codec = current_codec()
    form = reserved_form(stored)
    current = read_reference(stored) if form == OFFLOADED else stored
    if codec.rotate(current) is current:
        return Rekeyed(stored, None)
    packed = pack(codec.decode(current), run_id)
    replaced = stored[OFFLOADED]["name"] if form == OFFLOADED else None
    if reserved_form(packed) == OFFLOADED and packed[OFFLOADED]["name"] == replaced:
        replaced = None  # the same file still: never delete what the new form names
    return Rekeyed(packed, replaced)
