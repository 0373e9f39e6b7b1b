"""DATABASE_URL as the demo settings read it: one host through dj-database-url, a libpq host
list (a primary that fails over) through libpq's own parser."""

from __future__ import annotations

import pytest

from config.database_url import database


def test_database_url_host_list_keeps_every_host_port_and_option() -> None:
    entry = database(
        "postgres://fanfold:s%40cret@db1:5432,db2:6432/fanfold?target_session_attrs=read-write"
        "&sslmode=require",
        60,
    )
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert (entry["HOST"], entry["PORT"]) == ("db1,db2", "5432,6432")
    assert (entry["NAME"], entry["USER"], entry["PASSWORD"]) == ("fanfold", "fanfold", "s@cret")
    assert entry["OPTIONS"] == {"target_session_attrs": "read-write", "sslmode": "require"}
    assert entry["CONN_MAX_AGE"] == 60


def test_database_url_one_host_is_dj_database_urls() -> None:
    entry = database("postgres://u:p@db1:5433/app", 60)
    assert (entry["HOST"], entry["PORT"], entry["NAME"]) == ("db1", 5433, "app")


def test_database_url_host_list_must_be_postgres() -> None:
    with pytest.raises(ValueError, match="postgres://"):
        database("mysql://u@a:1,b:2/app", 60)
