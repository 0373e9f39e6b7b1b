"""The WAL this database's own transactions wrote between two positions of a shared server.

`pg_current_wal_lsn()` is the server's: where other databases write at the same time (another
bench's load, a test suite), the difference between two positions counts their WAL too; a
COPY beside the bench once made 5,000 retired runs read 28.5 KB each. Where `pg_waldump` and
the WAL files can be read (a local server, the bench run by their owner or root), the records
are read back and only this database's are counted: a record on one of its relations
(`rel <tablespace>/<database>/<relation>`, `base/<database>/...`), or of a transaction that
wrote one (its commit, its locks). Elsewhere `own_wal_bytes` says None and the bench reports
the server's figure alone.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from django.db import DatabaseError, connection

_TOTAL = re.compile(r"len \(rec/tot\):\s*\d+/\s*(\d+)")
_TX = re.compile(r"tx:\s*(\d+)")
_WALDUMP = "/usr/lib/postgresql/{major}/bin/pg_waldump"


def flushed_lsn() -> int:
    """The WAL's position flushed to disk, in bytes (what pg_waldump can read up to)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn")
        return int(cursor.fetchone()[0])


def own_wal_bytes(start: int, end: int) -> int | None:
    """The bytes of WAL between `start` and `end` that this database's transactions wrote;
    None where the WAL cannot be read back here."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('data_directory'), current_setting('server_version_num'),"
                " (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            data_dir, version, oid = cursor.fetchone()
    except DatabaseError:
        return None
    waldump = shutil.which("pg_waldump") or _WALDUMP.format(major=int(version) // 10000)
    wal_dir = Path(data_dir) / "pg_wal"
    if not Path(waldump).exists() or not wal_dir.is_dir() or end <= start:
        return None
    command = [waldump, "-p", str(wal_dir), "-s", _lsn(start), "-e", _lsn(end)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return _database_share(done.stdout.splitlines(), int(oid))


def _database_share(lines: list[str], oid: int) -> int:
    ours = re.compile(rf"rel \d+/{oid}/|base/{oid}/")
    records = []
    for line in lines:
        total, tx = _TOTAL.search(line), _TX.search(line)
        if total and tx:
            records.append((int(total.group(1)), int(tx.group(1)), bool(ours.search(line))))
    writers = {tx for _, tx, mine in records if mine and tx}
    return sum(size for size, tx, mine in records if mine or (tx and tx in writers))


def _lsn(position: int) -> str:
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"
