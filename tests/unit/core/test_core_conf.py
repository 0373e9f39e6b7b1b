"""Typed settings (runtime.conf) and the system check that rejects bad values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.checks import run_checks

from runtime import conf
from runtime.checks import check_fanfold_settings


@pytest.fixture(autouse=True)
def _fresh_conf() -> Iterator[None]:
    conf.reset()
    yield
    conf.reset()


def test_conf_defaults_match_the_contract() -> None:
    parsed = conf.parse({})
    assert parsed == conf.FanfoldSettings()
    assert parsed.PUBLISH_BATCH_SIZE == 100
    assert (parsed.BRANCH_CHUNK, parsed.BRANCH_CHUNK_SECONDS) == (25, 0.1)
    assert parsed.MAX_PAYLOAD_BYTES == 1024 * 1024
    assert parsed.WORKFLOW_MODULES == ()


def test_conf_parse_coerces_environment_strings() -> None:
    parsed = conf.parse(
        {
            "MAX_PAYLOAD_BYTES": "2048",
            "LEASE_SECONDS": "0.5",
            "CHECKPOINT_ASYNC_WINDOW": "0",
            "WORKFLOW_MODULES": " shop.flows, ,billing.flows,",
        }
    )
    assert parsed.MAX_PAYLOAD_BYTES == 2048
    assert parsed.LEASE_SECONDS == 0.5
    assert parsed.CHECKPOINT_ASYNC_WINDOW == 0.0
    assert parsed.WORKFLOW_MODULES == ("shop.flows", "billing.flows")
    assert conf.parse({"WORKFLOW_MODULES": ["a.b"]}).WORKFLOW_MODULES == ("a.b",)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"LEASE_SECONDS": "soon"}, "FANFOLD_LEASE_SECONDS must be a number"),
        ({"MAX_PAYLOAD_BYTES": "1.5"}, "FANFOLD_MAX_PAYLOAD_BYTES must be a number"),
        ({"MAX_PAYLOAD_BYTES": "0"}, "FANFOLD_MAX_PAYLOAD_BYTES must be greater than 0"),
        (
            {"CHECKPOINT_ASYNC_WINDOW": "-0.1"},
            "FANFOLD_CHECKPOINT_ASYNC_WINDOW must not be negative",
        ),
        ({"PUBLISH_BATCH_SIZE": "101"}, "FANFOLD_PUBLISH_BATCH_SIZE must be at most 100"),
        ({"BRANCH_CHUNK": "101"}, "FANFOLD_BRANCH_CHUNK must be at most 100"),
        ({"BRANCH_CHUNK": "0"}, "FANFOLD_BRANCH_CHUNK must be greater than 0"),
        ({"BRANCH_CHUNK_SECONDS": "-1"}, "FANFOLD_BRANCH_CHUNK_SECONDS must be greater than 0"),
        ({"WORKFLOW_MODULES": ["a", 3]}, "FANFOLD_WORKFLOW_MODULES must be a comma-separated list"),
        ({"BOGUS": "1"}, "unknown Fanfold setting(s): FANFOLD_BOGUS"),
    ],
)
def test_conf_parse_rejects_bad_values_naming_the_variable(
    raw: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(conf.SettingsError) as info:
        conf.parse(raw)
    assert fragment in str(info.value)


def test_conf_get_is_cached_and_follows_setting_changes(settings: Any) -> None:
    settings.FANFOLD = {"MAX_PAYLOAD_BYTES": "1000"}
    first = conf.get()
    assert first.MAX_PAYLOAD_BYTES == 1000 and conf.get() is first  # parsed once
    settings.FANFOLD = {"MAX_PAYLOAD_BYTES": "2000"}  # Django's setting_changed resets it
    assert conf.get().MAX_PAYLOAD_BYTES == 2000


def test_conf_system_check_passes_valid_settings(settings: Any) -> None:
    settings.FANFOLD = {"LEASE_SECONDS": "2"}
    assert check_fanfold_settings() == []


def test_conf_system_check_reports_a_bad_value_through_manage_check(settings: Any) -> None:
    settings.FANFOLD = {"LEASE_SECONDS": "-1"}
    errors = [e for e in run_checks() if e.id == "fanfold.E001"]
    assert len(errors) == 1
    assert "FANFOLD_LEASE_SECONDS must be greater than 0" in errors[0].msg
    assert errors[0].is_serious()


def test_conf_system_check_refuses_pickle(settings: Any) -> None:
    settings.CELERY_ACCEPT_CONTENT = ["json", "pickle"]
    assert [e.id for e in check_fanfold_settings()] == ["fanfold.E002"]
