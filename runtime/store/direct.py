"""Sessions of Fanfold's own on the database itself, past any connection pooler.

Three things need a PostgreSQL session that lasts: the LISTEN of run notifications
(runtime.store.messaging.listener), the liveness lock each worker process holds for its whole life
(runtime.leases.liveness) and the stream slots of the SSE cap
(runtime.store.messaging.stream_slots). A pooler in transaction mode (PgBouncer, RDS Proxy, pgcat)
hands each transaction whichever server connection is free, so a LISTEN or a session lock taken
through it lands on a connection that someone else uses next. These sessions go to
FANFOLD_DIRECT_DATABASE_URL instead; without it, to Django's default database.

Everything else goes through Django's connections, which may be pooled: behind a pooler
(FANFOLD_DATABASE_POOLED) no statement is prepared on them (runtime.store.connection).
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import connection
from psycopg.conninfo import conninfo_to_dict

from runtime import conf

# DATABASES OPTIONS that Django's PostgreSQL backend takes for itself, not libpq.
_DJANGO_OPTIONS = frozenset({
    "isolation_level", "server_side_binding", "pool", "assume_role", "prepare_threshold",
    "cursor_factory", "context",
})  # fmt: skip


def pooled() -> bool:
    """Whether Django's default database is reached through a transaction-pooling pooler."""
    return conf.get().DATABASE_POOLED


def direct_params() -> dict[str, Any]:
    """psycopg's connection keywords for a direct session: the URL's, or the default
    database's; the default database's name when the URL names none (test databases too)."""
    url = conf.get().DIRECT_DATABASE_URL
    settings = connection.settings_dict
    if url:
        params: dict[str, Any] = conninfo_to_dict(url)
        params.setdefault("dbname", settings["NAME"])
        return params
    found = {
        "dbname": settings["NAME"],
        "user": settings.get("USER"),
        "password": settings.get("PASSWORD"),
        "host": settings.get("HOST"),
        "port": str(settings["PORT"]) if settings.get("PORT") else None,
    }
    # libpq's own options (sslmode, sslrootcert, options, ...), as Django passes them.
    options = settings.get("OPTIONS") or {}
    found.update({key: value for key, value in options.items() if key not in _DJANGO_OPTIONS})
    return {key: value for key, value in found.items() if value}


def open_direct(application_name: str | None = None) -> psycopg.Connection:
    """A new autocommit session on the database itself, its own (not Django's); without
    `application_name`, the process's (PGAPPNAME) as Django's connections have."""
    params = direct_params()
    if application_name:
        params["application_name"] = application_name
    params.setdefault("connect_timeout", 10)  # unless the URL or OPTIONS name one
    return psycopg.connect(**params, autocommit=True)


def usable(raw: psycopg.Connection | None) -> bool:
    """Whether `raw` still answers: a round trip, since a session the server ended looks open
    until it is used."""
    if raw is None or raw.closed:
        return False
    try:
        raw.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True
