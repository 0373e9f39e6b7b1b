"""A DATABASE_URL listing the replica first and the primary second, with
`target_session_attrs=read-write`: libpq passes over the standby, and both Django's
connections and Fanfold's direct sessions (the LISTEN, liveness locks, stream slots) land on
the primary, as they would on a promoted standby after a failover."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.workers import ROOT
from tests.support.replica import PORT

pytestmark = pytest.mark.replica

PROBE = """
from django.db import connection
from runtime.store.direct import open_direct
with connection.cursor() as cursor:
    cursor.execute("SELECT inet_server_port(), pg_is_in_recovery()")
    print(*cursor.fetchone())
print(open_direct().execute("SELECT inet_server_port()").fetchone()[0])
"""


def ports_reached(url: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FANFOLD_")}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", PROBE],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.split()[-3:]


def test_multi_host_url_reaches_the_read_write_host() -> None:
    hosts = f"postgres://postgres@127.0.0.1:{PORT},127.0.0.1:5432/postgres"
    assert ports_reached(hosts + "?target_session_attrs=read-write") == ["5432", "False", "5432"]
    # Without the attribute libpq takes the first host that answers: the list is honoured.
    assert ports_reached(hosts) == [str(PORT), "True", str(PORT)]
