"""The raw psycopg connection under Django's, ready for Fanfold's prepared statements.

Django turns psycopg's statement preparing off (`prepare_threshold=None`, for poolers that
cannot keep prepared statements), and psycopg then ignores even an explicit
`execute(..., prepare=True)`. The checkpoint and fan-out statements are a few fixed shapes
run thousands of times, and parsing and planning them took about two thirds of a step's
server time. So this connection's threshold is raised to "never automatically": Django's
own queries stay unprepared, and ours are prepared because they ask. Behind PgBouncer this
needs its `max_prepared_statements` (1.21 and later) in transaction pooling mode.
"""

from __future__ import annotations

import psycopg
from django.db import connection

NEVER_AUTOMATICALLY = 2**31 - 1


def raw_connection() -> psycopg.Connection:
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        raw.prepare_threshold = NEVER_AUTOMATICALLY
    return raw
