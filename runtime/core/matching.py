"""Signal matching, pure: which waits a signal's payload satisfies, found by hashed keys.

A wait's `match` is a flat dict of JSON scalars; it is satisfied by a payload whose top-level
items include every one of its items. Each wait is stored under `match_key(name, match)`, and
the set of its match's keys under `keyset_key(name, keys)`. Emitting a signal enumerates the
key sets registered for its name (usually one or two) and looks up, for each, the key of the
payload's projection on it: the cost follows the key sets and the matched waits, never the
number of runs waiting.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from runtime.core.errors import PayloadError

MAX_MATCH_KEYS = 16
_SCALARS = (str, int, float, bool, type(None))


def _canonical(value: Any) -> Any:
    # 10 and 10.0 are one number in JSON; bools stay distinct from 1 and 0.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def check_match(match: object) -> dict[str, Any]:
    """`match` as a flat dict of JSON scalars (string keys); PayloadError otherwise."""
    if match is None:
        return {}
    if not isinstance(match, Mapping):
        raise PayloadError("match must be a dict of top-level keys and JSON scalar values")
    if len(match) > MAX_MATCH_KEYS:
        raise PayloadError(f"match takes at most {MAX_MATCH_KEYS} keys")
    out: dict[str, Any] = {}
    for key, value in match.items():
        if not isinstance(key, str) or not key or not _storable(key):
            raise PayloadError("match keys must be non-empty strings of valid Unicode without NUL")
        if not isinstance(value, _SCALARS) or (isinstance(value, str) and not _storable(value)):
            raise PayloadError(
                f"match[{key!r}] must be a JSON scalar (string of valid Unicode without NUL, "
                f"number, bool or null), not {type(value).__name__}"
            )
        if isinstance(value, float) and value != value:  # NaN never equals anything
            raise PayloadError(f"match[{key!r}] is not a JSON number")
        out[key] = value
    return out


def _storable(text: str) -> bool:
    # As payloads (runtime.core.jsonvalues): jsonb holds no U+0000, UTF-8 no lone surrogate.
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def match_key(name: str, match: Mapping[str, Any]) -> str:
    """The hashed key a wait for `name` with `match` is stored (and found) under."""
    items = sorted((k, _canonical(v)) for k, v in match.items())
    return _digest(json.dumps([name, items], ensure_ascii=False, separators=(",", ":")))


def keyset_key(name: str, keys: Iterable[str]) -> str:
    """The hashed key of one set of match keys used by waits for `name`."""
    return _digest(json.dumps([name, sorted(keys)], ensure_ascii=False, separators=(",", ":")))


def candidate_keys(name: str, payload: Any, keysets: Iterable[Iterable[str]]) -> list[str]:
    """The match keys of every wait this payload satisfies, one per key set it covers."""
    items = payload if isinstance(payload, dict) else {}
    found: list[str] = []
    for keys in keysets:
        keys = list(keys)
        if not all(k in items and isinstance(items[k], _SCALARS) for k in keys):
            continue
        found.append(match_key(name, {k: items[k] for k in keys}))
    return found


def matches(match: Mapping[str, Any], payload: Any) -> bool:
    """True if `payload` holds every item of `match` (a lookback's check on one signal)."""
    if not isinstance(payload, dict):
        return not match
    return all(
        k in payload
        and isinstance(payload[k], _SCALARS)
        and type(_canonical(payload[k])) is type(_canonical(v))
        and _canonical(payload[k]) == _canonical(v)
        for k, v in match.items()
    )
