"""DATABASE_URL, or a read replica's URL, as Django's DATABASES entry.

A URL may list several hosts, libpq's form for a primary that fails over to a standby:
`postgres://fanfold:secret@db1:5432,db2:5432/fanfold?target_session_attrs=read-write`.
dj-database-url reads one host only; libpq's own parser (psycopg's `conninfo_to_dict`) reads
the list, and Django's PostgreSQL backend hands HOST and PORT ("db1,db2", "5432,5432") and the
query's options to libpq as they are, which tries the hosts in order (docs/operating.md,
"Failover").
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from psycopg.conninfo import conninfo_to_dict

_CONNECTION_KEYS = {"host": "HOST", "port": "PORT", "dbname": "NAME", "user": "USER",
                    "password": "PASSWORD"}  # fmt: skip


def database(url: str, conn_max_age: int) -> dict[str, Any]:
    """The DATABASES entry of `url` (one host, or a postgres:// URL of several)."""
    if "," not in urlsplit(url).netloc:
        return dict(dj_database_url.parse(url, conn_max_age=conn_max_age))
    if not url.startswith(("postgres://", "postgresql://")):
        raise ValueError("a URL of several hosts must be a postgres:// URL")
    params = conninfo_to_dict(url)
    entry: dict[str, Any] = {
        "ENGINE": "django.db.backends.postgresql",
        "CONN_MAX_AGE": conn_max_age,
        "OPTIONS": {k: v for k, v in params.items() if k not in _CONNECTION_KEYS},
    }
    entry.update({name: params.get(key) or "" for key, name in _CONNECTION_KEYS.items()})
    return entry
