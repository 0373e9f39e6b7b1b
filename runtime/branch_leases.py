"""Branch leases: a thread per process renews `Step.wake_at` of the branches running here.

A branch's lease is its step's wake_at while it is running. A worker killed mid-body stops
renewing it; once it has expired the fan-out sweep publishes the next attempt, whose claim
may then take the step over.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from runtime import conf
from runtime.models import Step, StepStatus

log = logging.getLogger("fanfold.branches")


class BranchLeases:
    """Keeps the leases of this process's running branches fresh (one thread per process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[uuid.UUID, int] = {}
        self._thread: threading.Thread | None = None

    def hold(self, sid: uuid.UUID) -> None:
        with self._lock:
            self._live[sid] = self._live.get(sid, 0) + 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._beat_forever, name="fanfold-branch-leases", daemon=True
                )
                self._thread.start()

    def release(self, sid: uuid.UUID) -> None:
        with self._lock:
            count = self._live.get(sid, 0) - 1
            if count <= 0:
                self._live.pop(sid, None)
            else:
                self._live[sid] = count

    def beat_once(self) -> int:
        with self._lock:
            ids = list(self._live)
        if not ids:
            return 0
        until = timezone.now() + timedelta(seconds=conf.get().LEASE_SECONDS)
        return Step.objects.filter(id__in=ids, status=StepStatus.RUNNING).update(wake_at=until)

    def _beat_forever(self) -> None:
        interval = max(conf.get().LEASE_SECONDS / 3, 0.2)
        while True:
            time.sleep(interval)
            try:
                self.beat_once()
            except Exception:  # a database hiccup must not stop the heartbeat
                log.exception("branch lease heartbeat failed")
                connection.close()


leases = BranchLeases()
