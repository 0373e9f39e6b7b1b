"""JSON text of values already checked as JSON values, made by one C encoder built once.

`json.dumps` and `JSONEncoder.encode` build a new C encoder, with its dictionary for the
circular-reference check, on every call: most of the time of encoding a step's small payload,
and a step encodes several. The values encoded here are checked JSON values
(runtime.core.jsonvalues copies them, and a cycle fails there), so one encoder without that
check serves every call, from any thread: the text is the same as `JSONEncoder.encode`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as json_encoder
from typing import Any


def text_encoder(
    *, ensure_ascii: bool = True, allow_nan: bool = True, separators: tuple[str, str] = (", ", ": ")
) -> Callable[[Any], str]:
    """`JSONEncoder(ensure_ascii=, allow_nan=, separators=).encode` for acyclic values; the
    defaults are `json.dumps`'s."""
    item_separator, key_separator = separators
    fallback = json.JSONEncoder(
        ensure_ascii=ensure_ascii,
        allow_nan=allow_nan,
        separators=separators,
        check_circular=False,
    )
    make = getattr(json_encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return fallback.encode
    escape = (
        json_encoder.encode_basestring_ascii if ensure_ascii else json_encoder.encode_basestring
    )
    encode_chunks = make(
        None, fallback.default, escape, None, key_separator, item_separator, False, False,
        allow_nan,
    )  # fmt: skip

    def encode(value: Any) -> str:
        return "".join(encode_chunks(value, 0))

    return encode


# The compact text Fanfold measures, encrypts and sends values as (no NaN: not JSON).
compact_json = text_encoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# `json.dumps`'s text, for psycopg's JSON parameters.
dumps_json = text_encoder()
