"""FANFOLD_ASYNC_CONCURRENCY and FANFOLD_ASYNC_LAG_WARNING: defaults, coercion, bounds."""

from __future__ import annotations

import pytest

from runtime import conf


def test_eventloop_settings_defaults() -> None:
    parsed = conf.parse({})
    assert (parsed.ASYNC_CONCURRENCY, parsed.ASYNC_LAG_WARNING) == (100, 0.1)


def test_eventloop_settings_coerce_environment_strings() -> None:
    parsed = conf.parse({"ASYNC_CONCURRENCY": "10000", "ASYNC_LAG_WARNING": "0"})
    assert (parsed.ASYNC_CONCURRENCY, parsed.ASYNC_LAG_WARNING) == (10000, 0.0)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"ASYNC_CONCURRENCY": "0"}, "FANFOLD_ASYNC_CONCURRENCY must be greater than 0"),
        ({"ASYNC_CONCURRENCY": "10001"}, "FANFOLD_ASYNC_CONCURRENCY must be at most 10000"),
        ({"ASYNC_CONCURRENCY": "many"}, "FANFOLD_ASYNC_CONCURRENCY must be a number"),
        ({"ASYNC_LAG_WARNING": "-0.1"}, "FANFOLD_ASYNC_LAG_WARNING must not be negative"),
    ],
)
def test_eventloop_settings_reject_bad_values(raw: dict[str, str], fragment: str) -> None:
    with pytest.raises(conf.SettingsError, match=fragment):
        conf.parse(raw)
