"""JSON checks for everything Fanfold records: inputs, results, payloads.

`normalize` returns the value exactly as it will read back from the database (tuples become
lists), so a workflow sees the same value on its first execution and on every replay.
"""

from __future__ import annotations

import math
from typing import Any

from runtime.core.errors import PayloadError, PayloadTooLarge
from runtime.core.json_text import compact_json


def normalize(value: Any, what: str, path: str = "$") -> Any:
    """Check that `value` is a JSON value and return its JSON-shaped copy.

    `what` names the thing being recorded ("step 'orders.fetch' result") for the error message.
    """
    try:
        return _plain_copy(value)
    except _NotPlain:
        return _walked(value, what, path)


class _NotPlain(Exception):
    """A value `_plain_copy` leaves to the walk that names where it fails."""


_AS_THEY_ARE = frozenset({type(None), bool, int})


def _plain_copy(value: Any) -> Any:
    """`normalize` of a value made of exactly the JSON types (no subclasses) that passes its
    checks; raises _NotPlain otherwise. Every value a step records goes through here, so it
    builds no path text: the walk does, for the values it refuses."""
    kind = type(value)
    if kind is str:
        if not storable_text(value):
            raise _NotPlain
        return value
    if kind in _AS_THEY_ARE:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _NotPlain
        return value
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str or not storable_text(key):
                raise _NotPlain
            out[key] = _plain_copy(item)
        return out
    if kind is list or kind is tuple:
        return [_plain_copy(item) for item in value]
    raise _NotPlain


def storable_text(text: str) -> bool:
    """Whether the database can store `text`: PostgreSQL's jsonb cannot hold U+0000, and
    UTF-8 cannot hold a lone surrogate (JSON's "\\ud800" decodes to a str that has one)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walked(value: Any, what: str, path: str) -> Any:
    """`normalize`, naming the path of the first value it refuses."""
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
        return [_walked(item, what, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise PayloadError(
                    f"{what}: key {key!r} at {path} is a {type(key).__name__}; "
                    "JSON keys are strings"
                )
            _text(key, what, f"{path} (a key)")
            out[key] = _walked(item, what, f"{path}.{key}")
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
    return len(compact_json(value).encode("utf-8"))


def checked(value: Any, what: str, limit: int) -> tuple[Any, int]:
    """Normalize `value` and enforce the size limit; returns the value and its encoded size."""
    normalized = normalize(value, what)
    size = encoded_size(normalized)
    if size > limit:
        raise PayloadTooLarge(f"{what}: {size} bytes of JSON is over the limit of {limit} bytes")
    return normalized, size
