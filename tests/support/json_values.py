"""Hypothesis strategies of JSON values as Fanfold records them (runtime.core.jsonvalues)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# What jsonvalues.normalize accepts: no U+0000 (jsonb cannot hold it), no lone surrogates.
texts = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"))
# Keys that collide with the stored forms' reserved keys come up often on purpose.
RESERVED_KEYS = ("$ff:enc", "$ff:esc", "$ff:ref", "$ff:", "$ff:later")
keys = texts | st.sampled_from(RESERVED_KEYS)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)


def json_values(max_leaves: int = 30) -> st.SearchStrategy[Any]:
    """Any JSON value, one-key objects with reserved keys among them."""
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=5)
            | st.dictionaries(keys, inner, max_size=5)
            | st.builds(lambda key, item: {key: item}, st.sampled_from(RESERVED_KEYS), inner)
        ),
        max_leaves=max_leaves,
    )
