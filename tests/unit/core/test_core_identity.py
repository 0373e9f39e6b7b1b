"""Derived identities of runtime.core.identity: stable across replays, distinct otherwise."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from runtime.core.identity import as_run_id, deterministic_uuid, dispatch_key, parse_uuid, step_id

RUN_A = uuid.UUID("00000000-0000-4000-8000-00000000000a")
RUN_B = uuid.UUID("00000000-0000-4000-8000-00000000000b")


def test_identity_step_id_is_the_same_on_every_replay() -> None:
    assert step_id(RUN_A, 7) == step_id(uuid.UUID(str(RUN_A)), 7)


@given(
    first=st.integers(min_value=1, max_value=10**6),
    second=st.integers(min_value=1, max_value=10**6),
)
def test_identity_step_id_differs_by_position_and_run(first: int, second: int) -> None:
    assert (step_id(RUN_A, first) == step_id(RUN_A, second)) == (first == second)
    assert step_id(RUN_A, first) != step_id(RUN_B, first)


def test_identity_dispatch_key_names_run_position_and_attempt() -> None:
    assert dispatch_key(RUN_A, 3, 2) == f"ff:{RUN_A}:3:2"
    assert dispatch_key(RUN_A, 3, 2) != dispatch_key(RUN_A, 3, 3)


def test_identity_deterministic_uuid_is_version_4_and_repeatable() -> None:
    first = deterministic_uuid(RUN_A, 1)
    assert first.version == 4
    assert first.variant == uuid.RFC_4122
    assert deterministic_uuid(RUN_A, 1) == first
    assert len({deterministic_uuid(RUN_A, n) for n in range(1, 200)}) == 199
    assert deterministic_uuid(RUN_B, 1) != first


def test_identity_step_ids_of_a_run_share_a_prefix_and_sort_by_position() -> None:
    ids = [step_id(RUN_A, p) for p in (1, 2, 300, 70_000)]
    assert len({i.bytes[:12] for i in ids}) == 1  # neighbours in the primary-key index
    assert ids == sorted(ids)


def test_identity_step_id_rejects_positions_out_of_range() -> None:
    import pytest

    with pytest.raises(ValueError):
        step_id(RUN_A, 2**32)


def test_identity_run_ids_parse_from_uuids_and_their_text_only() -> None:
    import pytest

    from runtime.core.errors import RunNotFound

    assert as_run_id(RUN_A) is RUN_A
    assert as_run_id(str(RUN_A)) == RUN_A
    assert as_run_id(RUN_A.hex) == RUN_A
    assert parse_uuid("not-a-uuid") is None
    assert parse_uuid(12) is None
    with pytest.raises(RunNotFound, match="is not a run id"):
        as_run_id("x" * 500)
