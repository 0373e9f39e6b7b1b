"""This process's liveness key: a PostgreSQL session advisory lock held for its whole life.

Leases name the process that holds them (`Run.lease_owner`, `Step.lease_owner`). PostgreSQL
ends a dead process's session, and with it the lock, within moments of a SIGKILL or a lost
node; the takeover pass (runtime.recovery.dead_processes) then ends the dead owner's leases
at once instead
of waiting for them to expire. The lease stays the backstop for a hung process: a live one
keeps its lock however slow its step is.

The lock lives on a direct connection of its own (past any pooler: runtime.store.direct),
checked every second and, after a database restart or a failover, reconnected and locked
again under the same key, tried every tenth of a second until it is held. A forked child (a
prefork worker) gets a key and a connection of its own. On databases other than PostgreSQL
there is no key, nor with FANFOLD_LIVENESS_LOCKS off, which is its default behind a pooler
(FANFOLD_DATABASE_POOLED): a host of hundreds of processes would need a direct connection
for each. Their leases then move on when they expire.
"""

from __future__ import annotations

import logging
import secrets
import threading

import psycopg

from runtime import conf
from runtime.process.background import BackgroundLoop
from runtime.process.local import ProcessLocal
from runtime.store.dialect import postgres
from runtime.store.direct import usable
from runtime.store.lifecycle.leases import locked_connection

log = logging.getLogger("fanfold.liveness")

CHECK_INTERVAL = 1.0  # seconds between checks that the lock's connection is alive
# Seconds between attempts to take the lock again once it is lost: well within the takeover
# pass's two looks (runtime.recovery.dead_processes, a second apart), so that a live process
# holds its lock again soon after a failover's promotion and is not taken for dead.
RETAKE_INTERVAL = 0.1


class Liveness:
    """The liveness lock of one process (build one per process: `process_key()` does)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.key = secrets.randbits(62) | 1
        self._raw: psycopg.Connection | None = None
        self._loop = BackgroundLoop("fanfold-liveness", self.interval, self._check)
        self._loop.start()
        try:
            self._check()
        except Exception:  # the database is away: the loop takes the lock when it is back
            log.exception("could not take the liveness lock %s yet", self.key)

    def interval(self) -> float:
        """Seconds until the next check: sooner while the lock is not held."""
        return CHECK_INTERVAL if self._raw is not None else RETAKE_INTERVAL

    def _check(self) -> None:
        with self._lock:
            raw = self._raw
            if usable(raw):
                return
            if raw is not None:
                log.warning("liveness connection lost; taking the lock %s again", self.key)
                raw.close()
                self._raw = None
            self._raw = locked_connection(self.key)

    def close(self) -> None:
        """Release the lock (a clean shutdown)."""
        self._loop.stop()
        with self._lock:
            if self._raw is not None:
                self._raw.close()
            self._raw = None


_process_liveness: ProcessLocal[Liveness] = ProcessLocal(Liveness)


def process_key() -> int | None:
    """This process's liveness key, its lock held (taken on first use); None off PostgreSQL
    or with liveness locks off (FanfoldSettings.liveness_locks)."""
    if not postgres() or not conf.get().liveness_locks:
        return None
    return _process_liveness.get().key


def release_process_liveness() -> None:
    """Give up this process's lock and its connection (a warm shutdown, a test session's end)."""
    if _process_liveness.built():
        _process_liveness.get().close()
