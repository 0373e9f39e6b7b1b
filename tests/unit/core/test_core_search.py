"""Search attribute declarations, values and filters (runtime.core.search): pure rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runtime.core.errors import InvalidArguments
from runtime.core.search import InvalidFilter, checked_values, conditions, declaration, kind_of


def test_core_search_declaration_maps_types_to_kinds() -> None:
    declared = declaration({"customer": int, "amount": float, "vip": bool, "due": datetime})
    assert declared == {"customer": "int", "amount": "float", "vip": "bool", "due": "datetime"}
    assert declaration(None) == {}
    with pytest.raises(TypeError):
        declaration({f"a{n}": int for n in range(21)})


def test_core_search_values_take_their_json_forms() -> None:
    due = datetime(2026, 1, 2, tzinfo=UTC)
    kinds = {"amount": "float", "due": "datetime", "vip": "bool"}
    assert checked_values("w", kinds, {"amount": 3, "due": due, "vip": False}) == {
        "amount": 3.0, "due": due.isoformat(), "vip": False}  # fmt: skip
    with pytest.raises(InvalidArguments, match="declares no search attribute 'x'"):
        checked_values("w", kinds, {"x": 1})


def test_core_search_kind_of_refuses_disagreeing_declarations() -> None:
    assert kind_of("n", [{"n": "int"}, {"n": "float"}]) == "float"
    with pytest.raises(InvalidArguments, match="different types"):
        kind_of("n", [{"n": "int"}, {"n": "str"}])
    with pytest.raises(InvalidArguments, match="no workflow declares"):
        kind_of("n", [{"m": "int"}])


def test_core_search_conditions_read_text_and_name_a_bad_filter() -> None:
    (cond,) = conditions({"n__in": "1,2"}, [{"n": "int"}], text=True)
    assert (cond.name, cond.op, cond.value) == ("n", "in", [1, 2])
    with pytest.raises(InvalidFilter) as refused:
        conditions({"n__in": ",".join(["1"] * 101)}, [{"n": "int"}], text=True)
    assert refused.value.name == "search.n__in"
    assert refused.value.code == "invalid_filter"
