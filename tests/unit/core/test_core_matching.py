"""Signal matching of runtime.core.matching: an emit's hashed lookup and a lookback's direct
check agree on every payload; keys are stable and order-free; bad matches are refused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.core.errors import PayloadError
from runtime.core.matching import (
    MAX_MATCH_KEYS,
    candidate_keys,
    check_match,
    keyset_key,
    match_key,
    matches,
)

NAME = "payment.settled"
KEYS = st.sampled_from(["order_id", "amount", "currency", "by", "n"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, 1, 10, 10.0, 1.0, 0.0, -0.0, True, False, "10", "", "a"])
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
              max_size=8)
)  # fmt: skip
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    KEYS, inner, max_size=3), max_leaves=6)  # fmt: skip
MATCHES = st.dictionaries(KEYS, SCALARS, max_size=4)
PAYLOADS = st.dictionaries(KEYS, JSON, max_size=5) | JSON


def _emit_finds(match: dict[str, Any], payload: Any) -> bool:
    return match_key(NAME, match) in candidate_keys(NAME, payload, [list(match)])


@given(match=MATCHES, payload=PAYLOADS)
def test_matching_hashed_lookup_agrees_with_the_direct_check(
    match: dict[str, Any], payload: Any
) -> None:
    assert _emit_finds(match, payload) == matches(match, payload)


@given(match=MATCHES, extra=st.dictionaries(st.sampled_from(["x", "y"]), JSON, max_size=2))
def test_matching_a_payload_holding_the_match_satisfies_it(
    match: dict[str, Any], extra: dict[str, Any]
) -> None:
    payload = {**extra, **match}
    assert matches(match, payload)
    assert _emit_finds(match, payload)


@given(match=MATCHES)
def test_matching_keys_do_not_depend_on_order(match: dict[str, Any]) -> None:
    reversed_match = dict(reversed(list(match.items())))
    assert match_key(NAME, match) == match_key(NAME, reversed_match)
    assert keyset_key(NAME, list(match)) == keyset_key(NAME, list(reversed_match))


def test_matching_numbers_are_json_numbers_and_bools_stay_bools() -> None:
    assert match_key(NAME, {"amount": 10}) == match_key(NAME, {"amount": 10.0})
    assert match_key(NAME, {"amount": 1}) != match_key(NAME, {"amount": True})
    assert match_key(NAME, {"amount": 0}) != match_key(NAME, {"amount": False})
    assert match_key(NAME, {"amount": "10"}) != match_key(NAME, {"amount": 10})
    assert matches({"amount": 10}, {"amount": 10.0, "by": "ana"})
    assert not matches({"amount": 1}, {"amount": True})
    assert match_key(NAME, {"order_id": "42"}) != match_key("other", {"order_id": "42"})


def test_matching_an_empty_match_takes_any_payload() -> None:
    assert matches({}, {"order_id": "42"}) and matches({}, [1, 2]) and matches({}, None)
    assert candidate_keys(NAME, "text", [[]]) == [match_key(NAME, {})]


def test_matching_candidate_keys_one_per_covered_key_set() -> None:
    payload = {"order_id": "42", "amount": 10, "lines": [1, 2]}
    keysets = [["order_id"], ["order_id", "amount"], ["currency"], ["lines"]]
    assert candidate_keys(NAME, payload, keysets) == [
        match_key(NAME, {"order_id": "42"}),
        match_key(NAME, {"order_id": "42", "amount": 10}),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        ["order_id"],
        "order_id",
        {"order": {"id": 1}},
        {"order": [1]},
        {1: "a"},
        {"": "a"},
        {"a\x00": 1},
        {"a": "b\x00"},
        {"a": "\ud800"},
        {"\udfff": 1},
        {"a": float("nan")},
        {f"k{i}": i for i in range(MAX_MATCH_KEYS + 1)},
    ],
)
def test_matching_check_match_refuses_what_is_not_a_flat_dict_of_scalars(bad: Any) -> None:
    with pytest.raises(PayloadError):
        check_match(bad)


def test_matching_check_match_takes_none_as_no_keys() -> None:
    assert check_match(None) == {}
    assert check_match({"order_id": "42", "amount": 10.5, "paid": True, "note": None}) == {
        "order_id": "42", "amount": 10.5, "paid": True, "note": None,
    }  # fmt: skip
