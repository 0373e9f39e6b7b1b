"""Derived identities: step ids and dispatch keys come from the run, never from chance."""

from __future__ import annotations

import hashlib
import uuid
from functools import lru_cache

from runtime.core.errors import RunNotFound
from runtime.core.jsonvalues import storable_text

_STEP_NAMESPACE = uuid.UUID("6f0d2a5e-3b1c-4e8f-9a77-0c5b1f2d9e41")


_MAX_POSITION = 2**32 - 1

MAX_NAME_LENGTH = 200  # of Run.workflow and Step.name


def parse_uuid(value: object) -> uuid.UUID | None:
    """`value` as a UUID (a UUID, or text that parses as one), else None."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def as_run_id(value: object) -> uuid.UUID:
    """`value` as a run id (a UUID, or its text); RunNotFound if it cannot be one."""
    parsed = parse_uuid(value)
    if parsed is None:
        raise RunNotFound(f"{str(value)[:80]!r} is not a run id")
    return parsed


def check_name(name: object, what: str) -> str:
    """A workflow, step or callback name as the database can store it; ValueError if not."""
    if (
        not isinstance(name, str)
        or not name
        or len(name) > MAX_NAME_LENGTH
        or not storable_text(name)
    ):
        shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:57] + "..."
        raise ValueError(
            f"a {what} name must be a non-empty string of at most {MAX_NAME_LENGTH} characters "
            f"without NUL or a lone surrogate, not {shown}"
        )
    return name


MAX_IDEMPOTENCY_KEY_LENGTH = 255


# The namespace of the idempotency keys the runtime makes itself: child runs (`ff-child:`),
# schedule ticks (`schedule:<workflow>:<tick>`, the contract's form) and any later `ff-` kind
# (debounce). A caller's key may not start with one of these.
RESERVED_KEY_PREFIXES = ("ff-", "schedule:")


def is_reserved_key(key: str) -> bool:
    """Whether `key` lies in the runtime's own namespace of idempotency keys."""
    return key.startswith(RESERVED_KEY_PREFIXES)


def check_idempotency_key(key: object) -> str:
    """An idempotency key as a run can store it; ValueError if not."""
    if not isinstance(key, str) or not key:
        raise ValueError("idempotency_key must be a non-empty string")
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
        raise ValueError(f"idempotency_key must be at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters")
    if "\x00" in key:
        raise ValueError("idempotency_key must not contain NUL (U+0000)")
    if not storable_text(key):  # no NUL by now: a lone surrogate
        raise ValueError("idempotency_key must be valid Unicode (no lone surrogate)")
    return key


# The namespace of the keys debounced starts share (runtime.messaging.debounce): inside the
# runtime's own (RESERVED_KEY_PREFIXES), which start refuses from callers.
DEBOUNCE_KEY_PREFIX = "ff-debounce:"


def debounce_run_key(workflow: str, key: str) -> str:
    """The idempotency key of the pending run that debounced starts of (workflow, key) share."""
    digest = hashlib.sha256(f"{workflow}\x00{key}".encode()).hexdigest()
    return f"{DEBOUNCE_KEY_PREFIX}{digest}"


def step_id(run_id: uuid.UUID, position: int) -> uuid.UUID:
    """The primary key of the step at `position` of `run_id`: the same on every replay.

    96 bits hashed from the run, then the position: a run's steps are neighbours in the
    primary-key index, so a long run appends to one index page instead of dirtying a random
    page (and logging a full page image) per step.
    """
    if not 0 <= position <= _MAX_POSITION:
        raise ValueError(f"step position {position} is out of range")
    return uuid.UUID(bytes=_run_prefix(run_id) + position.to_bytes(4, "big"))


@lru_cache(maxsize=4096)
def _run_prefix(run_id: uuid.UUID) -> bytes:
    return uuid.uuid5(_STEP_NAMESPACE, str(run_id)).bytes[:12]


def group_id(run_id: uuid.UUID, group_position: int) -> uuid.UUID:
    """The id of the fan-out group whose first branch is at `group_position`: derived, so a
    replayed fan-out names the same row."""
    return uuid.uuid5(step_id(run_id, group_position), "fanout")


def dispatch_key(run_id: uuid.UUID, position: int, attempt: int) -> str:
    """The idempotency key of a step's dispatch: a republish is recognisably the same message."""
    return f"ff:{run_id}:{position}:{attempt}"


def deterministic_uuid(run_id: uuid.UUID, counter: int) -> uuid.UUID:
    """`ctx.uuid4()`: random-looking, version 4 shaped, identical on replay."""
    raw = uuid.uuid5(_STEP_NAMESPACE, f"{run_id}:uuid:{counter}").bytes
    return uuid.UUID(bytes=raw, version=4)


def child_run_key(run_id: uuid.UUID, position: int) -> str:
    """The idempotency key of the child run a fan-out branch starts: one child per branch."""
    return f"{child_run_key_prefix(run_id)}{position}"


def child_run_key_prefix(run_id: uuid.UUID) -> str:
    return f"ff-child:{run_id}:"
