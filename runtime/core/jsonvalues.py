"""JSON checks for everything Fanfold records: inputs, results, payloads.

`normalize` returns the value exactly as it will read back from the database (tuples become
lists), so a workflow sees the same value on its first execution and on every replay.
"""

from __future__ import annotations

import json
import math
from typing import Any

from runtime.core.errors import PayloadError, PayloadTooLarge

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def normalize(value: Any, what: str, path: str = "$") -> Any:
    """Check that `value` is a JSON value and return its JSON-shaped copy.

    `what` names the thing being recorded ("step 'orders.fetch' result") for the error message.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value, what, path)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PayloadError(f"{what}: {value!r} at {path} is not a JSON number")
        return value
    if isinstance(value, list | tuple):
        return [normalize(item, what, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise PayloadError(
                    f"{what}: key {key!r} at {path} is a {type(key).__name__}; "
                    "JSON keys are strings"
                )
            _text(key, what, f"{path} (a key)")
            out[key] = normalize(item, what, f"{path}.{key}")
        return out
    raise PayloadError(f"{what}: value of type {type(value).__name__} at {path} is not JSON")


def _text(value: str, what: str, path: str) -> str:
    # PostgreSQL's jsonb cannot hold U+0000, and UTF-8 cannot hold a lone surrogate: refused
    # here, as the step's own error, instead of failing the checkpoint that records it.
    if "\x00" in value:
        raise PayloadError(f"{what}: text at {path} contains U+0000, which cannot be stored")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise PayloadError(
            f"{what}: text at {path} is not valid Unicode (a lone surrogate)"
        ) from None
    return value


def encoded_size(value: Any) -> int:
    """Bytes of the compact UTF-8 JSON encoding of an already normalized value."""
    if value is None:
        return 4
    return len(_encoder.encode(value).encode("utf-8"))


def checked(value: Any, what: str, limit: int) -> tuple[Any, int]:
    """Normalize `value` and enforce the size limit; returns the value and its encoded size."""
    normalized = normalize(value, what)
    size = encoded_size(normalized)
    if size > limit:
        raise PayloadTooLarge(f"{what}: {size} bytes of JSON is over the limit of {limit} bytes")
    return normalized, size
