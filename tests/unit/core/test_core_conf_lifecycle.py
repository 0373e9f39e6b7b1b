"""The data lifecycle's settings (runtime.conf) and their system checks (runtime.checks)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.checks import run_checks

from runtime import conf
from runtime.checks import check_data_lifecycle_storages, check_unread_environment
from runtime.core.payload_keys import generate_key


@pytest.fixture(autouse=True)
def _fresh_conf() -> Iterator[None]:
    conf.reset()
    yield
    conf.reset()


def test_conf_lifecycle_defaults_match_the_contract() -> None:
    parsed = conf.parse({})
    defaults = (parsed.PAYLOAD_KEYS, parsed.OFFLOAD_BYTES, parsed.RETENTION, parsed.ARCHIVE)
    assert defaults == ((), 256 * 1024, timedelta(days=30), False)


def test_conf_payload_keys_come_from_a_comma_separated_environment_string() -> None:
    first, second = generate_key(), generate_key()

    def keys(raw: Any) -> tuple[str, ...]:
        return conf.parse({"PAYLOAD_KEYS": raw}).PAYLOAD_KEYS

    assert keys(f" {first}, {second} ,") == (first, second)
    assert keys([first]) == (first,)
    assert keys("") == ()


def test_conf_payload_keys_stay_out_of_the_settings_repr() -> None:
    key = generate_key()
    assert key not in repr(conf.parse({"PAYLOAD_KEYS": key}))


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("not-a-key", "key 1 of 1 is not a Fernet key"),
        ([generate_key(), "x" * 44], "key 2 of 2 is not a Fernet key"),
        (42, "FANFOLD_PAYLOAD_KEYS must be a list of Fernet keys"),
    ],
)
def test_conf_payload_keys_refuse_malformed_keys_without_quoting_them(
    raw: Any, fragment: str
) -> None:
    with pytest.raises(conf.SettingsError) as raised:
        conf.parse({"PAYLOAD_KEYS": raw})
    assert fragment in str(raised.value)
    assert "x" * 44 not in str(raised.value) and "not-a-key" not in str(raised.value)


def test_conf_malformed_payload_key_fails_manage_check(settings: Any) -> None:
    settings.FANFOLD = {"PAYLOAD_KEYS": "short"}
    errors = [e for e in run_checks() if e.id == "fanfold.E001"]
    assert len(errors) == 1 and errors[0].is_serious()
    assert "FANFOLD_PAYLOAD_KEYS: key 1 of 1 is not a Fernet key" in errors[0].msg
    assert "short" not in errors[0].msg


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("12h", timedelta(hours=12)),
        ("7d", timedelta(days=7)),
        (3600, timedelta(hours=1)),
        (timedelta(days=90), timedelta(days=90)),
        (None, None),
        ("none", None),
        ("Never", None),
        ("off", None),
    ],
)
def test_conf_retention_reads_durations_and_none(raw: Any, expected: timedelta | None) -> None:
    retention = conf.parse({"RETENTION": raw}).RETENTION
    assert retention == expected


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("forever", "FANFOLD_RETENTION: 'forever' is not a duration"),
        ("0d", "FANFOLD_RETENTION: duration '0d' is zero"),
        ("-1d", "is negative"),
        ("", "FANFOLD_RETENTION: '' is not a duration"),
    ],
)
def test_conf_retention_refuses_what_is_no_duration(raw: Any, fragment: str) -> None:
    with pytest.raises(conf.SettingsError) as raised:
        conf.parse({"RETENTION": raw})
    assert fragment in str(raised.value)


def test_conf_offload_bytes_may_be_zero_but_not_negative() -> None:
    assert conf.parse({"OFFLOAD_BYTES": "0"}).OFFLOAD_BYTES == 0
    assert conf.parse({"OFFLOAD_BYTES": "1024"}).OFFLOAD_BYTES == 1024
    with pytest.raises(conf.SettingsError, match="must not be negative"):
        conf.parse({"OFFLOAD_BYTES": "-1"})


def test_conf_archive_is_on_or_off() -> None:
    assert conf.parse({"ARCHIVE": "true"}).ARCHIVE is True
    with pytest.raises(conf.SettingsError, match="FANFOLD_ARCHIVE must be on or off"):
        conf.parse({"ARCHIVE": "sometimes"})


def _without(settings: Any, *aliases: str) -> None:
    settings.STORAGES = {k: v for k, v in settings.STORAGES.items() if k not in aliases}


def test_checks_pass_with_the_demo_storages(settings: Any) -> None:
    settings.FANFOLD = {"ARCHIVE": True}
    assert check_data_lifecycle_storages() == []


def test_checks_warn_of_a_missing_payload_storage_while_offload_is_on(settings: Any) -> None:
    _without(settings, "fanfold_payloads")
    errors = [e for e in run_checks() if e.id == "fanfold.W004"]
    assert len(errors) == 1 and not errors[0].is_serious()
    assert 'no "fanfold_payloads" storage' in errors[0].msg
    settings.FANFOLD = {"OFFLOAD_BYTES": 0}
    assert check_data_lifecycle_storages() == []


def test_checks_report_a_missing_archive_storage_only_when_archiving(settings: Any) -> None:
    _without(settings, "fanfold_archive")
    assert check_data_lifecycle_storages() == []
    settings.FANFOLD = {"ARCHIVE": "on"}
    assert [e.id for e in check_data_lifecycle_storages()] == ["fanfold.E005"]


def test_checks_leave_bad_settings_to_the_settings_check(settings: Any) -> None:
    _without(settings, "fanfold_payloads", "fanfold_archive")
    settings.FANFOLD = {"ARCHIVE": "sometimes"}
    assert check_data_lifecycle_storages() == []


def _without_fanfold_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in [v for v in os.environ if v.startswith("FANFOLD_")]:
        monkeypatch.delenv(variable)


def test_checks_warn_of_a_fanfold_variable_the_settings_do_not_read(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.FANFOLD = {"LEASE_SECONDS": 30}
    _without_fanfold_environment(monkeypatch)
    monkeypatch.setenv("FANFOLD_PAYLOAD_KEYS", generate_key())
    monkeypatch.setenv("FANFOLD_LEASE_SECONDS", "30")  # read: no warning
    monkeypatch.setenv("FANFOLD_SITE_COLOUR", "blue")  # no Fanfold setting: the site's own
    found = [(e.id, e.msg) for e in check_unread_environment()]
    assert found == [
        (
            "fanfold.W007",
            "FANFOLD_PAYLOAD_KEYS is set in the environment, but settings.FANFOLD has no "
            "'PAYLOAD_KEYS': Fanfold does not read it",
        )
    ]


def test_checks_warn_of_malformed_payload_keys_in_the_environment(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.FANFOLD = {}
    _without_fanfold_environment(monkeypatch)
    monkeypatch.setenv("FANFOLD_PAYLOAD_KEYS", "garbage")
    found = {e.id: e for e in run_checks() if e.id in ("fanfold.W007", "fanfold.W008")}
    assert set(found) == {"fanfold.W007", "fanfold.W008"}
    assert found["fanfold.W008"].msg.startswith("FANFOLD_PAYLOAD_KEYS in the environment: ")
    assert not any(e.is_serious() for e in found.values())
