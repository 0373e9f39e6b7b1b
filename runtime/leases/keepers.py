"""Lease keepers: a thread per process keeps the leases of what runs here fresh.

Two kinds of lease use the same keeper: a run's (`Run.lease_expires_at`, keyed by the
execution's lease token) and a running fan-out branch's (its `Step.wake_at`, the time the
step next needs attention; keyed by step id). A worker killed with SIGKILL stops renewing
them; once they expire the sweeps hand the work to another worker. The thread retires when
nothing is held and starts again on the next `hold`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Hashable
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from runtime import conf
from runtime.core.clock import current_time
from runtime.process.background import BackgroundLoop
from runtime.store.lifecycle.leases import renew_branch_leases, renew_run_leases

K = TypeVar("K", bound=Hashable)


class LeaseKeeper(Generic[K]):
    """Renews, every third of a lease, the leases held in this process."""

    def __init__(self, name: str, renew: Callable[[list[K], datetime], int]) -> None:
        self._renew = renew
        self._lock = threading.Lock()
        self._live: dict[K, int] = {}  # key -> holders in this process
        self._loop = BackgroundLoop(name, _beat_interval, self._beat)

    def hold(self, key: K) -> None:
        """Keep `key`'s lease alive until `release(key)`."""
        with self._lock:
            self._live[key] = self._live.get(key, 0) + 1
            self._loop.start()

    def release(self, key: K) -> None:
        with self._lock:
            count = self._live.get(key, 0) - 1
            if count <= 0:
                self._live.pop(key, None)
            else:
                self._live[key] = count

    def stop(self) -> None:
        """Stop the renewal thread (it closes its connection); a later `hold` starts it again."""
        self._loop.stop()  # not under the lock: a pass takes it

    @property
    def running(self) -> bool:
        """Whether this process's renewal thread is alive."""
        return self._loop.running

    def beat_once(self) -> int:
        """Extend every lease held here; returns how many rows were touched."""
        with self._lock:
            keys = list(self._live)
        if not keys:
            return 0
        return self._renew(keys, current_time() + timedelta(seconds=conf.get().LEASE_SECONDS))

    def _beat(self) -> None:
        with self._lock:
            if not self._live:
                # Under the lock a concurrent `hold` either came first (and is seen here) or
                # finds the loop retired and starts a new one.
                self._loop.retire()
                return
        self.beat_once()


def _beat_interval() -> float:
    return max(conf.get().LEASE_SECONDS / 3, 0.2)


run_leases: LeaseKeeper[str] = LeaseKeeper("fanfold-run-leases", renew_run_leases)
# A branch's lease is held by (run id, step id).
branch_leases: LeaseKeeper[tuple[uuid.UUID, uuid.UUID]] = LeaseKeeper(
    "fanfold-branch-leases", renew_branch_leases
)
