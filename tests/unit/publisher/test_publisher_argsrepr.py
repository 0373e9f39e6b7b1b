"""A task message's argsrepr is what Celery's saferepr writes, whichever way it is computed."""

from __future__ import annotations

from typing import Any

import pytest
from celery.utils.saferepr import saferepr
from hypothesis import given
from hypothesis import strategies as st

from publisher.argsrepr import arguments_repr

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),  # quotes, backslashes, control characters and non-ASCII included
)
values = st.one_of(
    st.lists(scalars, max_size=8),
    st.lists(scalars, max_size=8).map(tuple),
    st.dictionaries(st.text(max_size=10), scalars, max_size=6),
    st.lists(st.lists(scalars, max_size=3), max_size=3),  # nested: saferepr's own way
    scalars,
)


@given(values, st.sampled_from([8, 40, 1024]))
def test_publisher_argsrepr_is_saferepr_for_any_value_and_size(value: Any, maxsize: int) -> None:
    assert arguments_repr(value, maxsize, maxlevels=3) == saferepr(value, maxsize, maxlevels=3)


@pytest.mark.parametrize(
    "value",
    [
        ["8fb13c4b-149c-459b-a1e2-3a4b9a67f372", 98870, 1, 1],  # a fan-out branch's arguments
        {"priority": 5},
        ["it's", "a\\b", "line\nbreak", "é"],
        [["nested"]],
        ["x" * 2000],  # beyond the size bound: cut as saferepr cuts it
    ],
)
def test_publisher_argsrepr_of_typical_and_awkward_arguments(value: Any) -> None:
    assert arguments_repr(value, 1024, maxlevels=3) == saferepr(value, 1024, maxlevels=3)
