"""JSON checks of runtime.core.jsonvalues: what is recorded, and how it is refused."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.core.errors import PayloadError, PayloadTooLarge
from runtime.core.json_text import compact_json, dumps_json
from runtime.core.jsonvalues import checked, encoded_size, normalize

storable = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=storable),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(alphabet=storable, max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(value=json_values)
def test_jsonvalues_normalize_returns_what_the_database_reads_back(value: Any) -> None:
    normalized = normalize(value, "thing")
    assert normalized == json.loads(json.dumps(value))
    assert encoded_size(normalized) == len(
        json.dumps(normalized, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    )


def test_jsonvalues_normalize_turns_tuples_into_lists_and_keeps_bools() -> None:
    assert normalize({"a": (1, (True, None))}, "x") == {"a": [1, [True, None]]}
    assert normalize(True, "x") is True


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (datetime(2030, 1, 1), "value of type datetime at $ is not JSON"),
        ({1, 2}, "value of type set at $ is not JSON"),
        (b"raw", "value of type bytes at $ is not JSON"),
        (Decimal("1.5"), "value of type Decimal at $ is not JSON"),
        ({"a": [1, object()]}, "value of type object at $.a[1] is not JSON"),
        ({"a": {3: "x"}}, "key 3 at $.a is a int|JSON keys are strings"),
        ([float("nan")], "nan at $[0] is not a JSON number"),
        ({"b": float("inf")}, "inf at $.b is not a JSON number"),
        (["ok", "a\x00b"], "text at $[1] contains U+0000"),
        ({"k\x00": 1}, "text at $ (a key) contains U+0000"),
        ({"s": "\ud800"}, "text at $.s is not valid Unicode"),
    ],
)
def test_jsonvalues_normalize_names_the_thing_the_place_and_the_problem(
    value: Any, fragment: str
) -> None:
    with pytest.raises(PayloadError) as info:
        normalize(value, "step 'orders.fetch' result")
    message = str(info.value)
    assert message.startswith("step 'orders.fetch' result: ")
    for part in fragment.split("|"):
        assert part in message


def test_jsonvalues_encoded_size_counts_utf8_bytes() -> None:
    assert encoded_size(None) == 4
    assert encoded_size({"a": 1}) == 7
    assert encoded_size("é") == 4  # two quotes and two bytes


def test_jsonvalues_checked_accepts_a_value_exactly_at_the_limit() -> None:
    value, size = checked(["ab"], "step 's' result", limit=6)
    assert (value, size) == (["ab"], 6)


def test_jsonvalues_checked_rejects_a_value_over_the_limit_with_its_size() -> None:
    with pytest.raises(PayloadTooLarge) as info:
        checked("x" * 10, "step 's' result", limit=11)
    assert isinstance(info.value, PayloadError)
    assert str(info.value) == "step 's' result: 12 bytes of JSON is over the limit of 11 bytes"
    assert info.value.code == "payload_too_large"


def test_jsonvalues_checked_reports_not_json_before_size() -> None:
    with pytest.raises(PayloadError) as info:
        checked({"when": datetime(2030, 1, 1)}, "workflow 'w' input", limit=1)
    assert not isinstance(info.value, PayloadTooLarge)
    assert "datetime at $.when" in str(info.value)


def test_jsonvalues_normalize_makes_subclasses_of_json_types_plain() -> None:
    class Count(int):
        pass

    class Ordered(dict[str, Any]):
        pass

    normalized = normalize(Ordered(n=Count(3), s=[Count(1)]), "x")
    assert normalized == {"n": 3, "s": [1]}
    assert type(normalized) is dict
    assert type(normalized["n"]) is int and type(normalized["s"][0]) is int


@given(value=json_values)
def test_jsonvalues_text_encoders_write_what_the_json_module_writes(value: Any) -> None:
    assert dumps_json(value) == json.dumps(value)
    assert compact_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_jsonvalues_compact_text_refuses_what_is_not_json() -> None:
    with pytest.raises(ValueError):
        compact_json([float("nan")])
    with pytest.raises(TypeError):
        compact_json({"at": datetime(2030, 1, 1)})
    assert dumps_json(float("inf")) == "Infinity"  # as json.dumps writes it
