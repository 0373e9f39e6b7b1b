"""The pooler settings (runtime.conf), their system check (runtime.checks) and where the
sessions of Fanfold's own connect (runtime.store.direct)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from runtime import conf
from runtime.checks import pooler_warnings
from runtime.store import direct

POSTGRES = {"ENGINE": "django.db.backends.postgresql", "NAME": "app", "HOST": "pooler"}


@pytest.fixture(autouse=True)
def _fresh_conf() -> Iterator[None]:
    conf.reset()
    yield
    conf.reset()


def _ids(database: dict[str, Any], **fanfold: Any) -> list[str]:
    return [str(message.id) for message in pooler_warnings(conf.parse(fanfold), database)]


def test_conf_pooler_defaults_are_unpooled_and_direct_through_django() -> None:
    parsed = conf.parse({})
    assert (parsed.DATABASE_POOLED, parsed.DIRECT_DATABASE_URL) == (False, "")


def test_conf_pooler_liveness_locks_default_on_direct_and_off_behind_a_pooler() -> None:
    assert conf.parse({}).liveness_locks is True
    assert conf.parse({"DATABASE_POOLED": "on"}).liveness_locks is False
    assert conf.parse({"DATABASE_POOLED": "on", "LIVENESS_LOCKS": "auto"}).liveness_locks is False
    assert conf.parse({"DATABASE_POOLED": "on", "LIVENESS_LOCKS": "on"}).liveness_locks is True
    assert conf.parse({"LIVENESS_LOCKS": "off"}).liveness_locks is False
    with pytest.raises(conf.SettingsError, match="FANFOLD_LIVENESS_LOCKS must be on, off or auto"):
        conf.parse({"LIVENESS_LOCKS": "sometimes"})


def test_conf_pooler_check_names_the_liveness_locks_only_when_they_are_on() -> None:
    def message(**fanfold: Any) -> str:
        found = pooler_warnings(conf.parse({"DATABASE_POOLED": "on", **fanfold}), POSTGRES)
        return str(found[0].msg)

    assert "liveness locks" not in message()
    assert "liveness locks" in message(LIVENESS_LOCKS="on")


def test_conf_pooler_direct_url_must_be_postgres() -> None:
    url = "postgres://app:secret@db.internal:5432/app"
    assert url == conf.parse({"DIRECT_DATABASE_URL": url}).DIRECT_DATABASE_URL
    assert "secret" not in repr(conf.parse({"DIRECT_DATABASE_URL": url}))
    with pytest.raises(conf.SettingsError, match="must be a postgres:// URL"):
        conf.parse({"DIRECT_DATABASE_URL": "mysql://db/app"})


def test_conf_pooler_check_warns_of_session_features_without_a_direct_url() -> None:
    assert _ids(POSTGRES, DATABASE_POOLED="on") == ["fanfold.W009", "fanfold.W010"]


def test_conf_pooler_check_is_quiet_when_configured_whole() -> None:
    database = {**POSTGRES, "DISABLE_SERVER_SIDE_CURSORS": True}
    url = "postgres://app@db.internal:5432"
    assert _ids(database, DATABASE_POOLED=True, DIRECT_DATABASE_URL=url) == []
    assert _ids(POSTGRES) == []


def test_conf_pooler_check_warns_of_a_direct_url_without_pooling() -> None:
    url = "postgres://app@db.internal:5432"
    assert _ids(POSTGRES, DIRECT_DATABASE_URL=url) == ["fanfold.W011"]


def test_conf_pooler_check_leaves_other_databases_alone() -> None:
    sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
    assert _ids(sqlite, DATABASE_POOLED=True) == []


def testdirect_params_take_the_url_and_the_default_database_name(
    monkeypatch: pytest.MonkeyPatch, fanfold_settings: Any
) -> None:
    fake = SimpleNamespace(settings_dict={"NAME": "test_app", "HOST": "pooler"})
    monkeypatch.setattr(direct, "connection", fake)
    fanfold_settings(DIRECT_DATABASE_URL="postgres://admin:pw@db.internal:5433")
    assert direct.direct_params() == {
        "user": "admin", "password": "pw", "host": "db.internal", "port": "5433",
        "dbname": "test_app",
    }  # fmt: skip
    fanfold_settings(DIRECT_DATABASE_URL="postgres://admin@db.internal:5433/real_name")
    assert direct.direct_params()["dbname"] == "real_name"
    fanfold_settings(DIRECT_DATABASE_URL="")
    assert direct.direct_params() == {"dbname": "test_app", "host": "pooler"}
    options = {"sslmode": "require", "isolation_level": 2, "server_side_binding": True}
    fake.settings_dict = {"NAME": "app", "OPTIONS": options}
    assert direct.direct_params() == {"dbname": "app", "sslmode": "require"}
