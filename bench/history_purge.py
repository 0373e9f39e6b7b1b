"""`bench history`'s purge: `fanfold purge` in a process of its own, which the bench can pause."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from django.db import connection

from bench.workers import ROOT, child_env

PURGE_APPLICATION = "fanfold-bench-purge"  # its connections' application_name
_TRIES = 500  # a purge batch lasts a fraction of a second: it is out of one well before


def _in_transaction() -> bool:
    """Whether a connection of the purge process is in a transaction (or a statement)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND state <> 'idle'",
            [PURGE_APPLICATION],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


class PurgeProcess(threading.Thread):
    """`fanfold purge --older-than 5d` in a process of its own; `ended` is set when it exits,
    with the exit status, its resource usage and how long it ran (paused time left out)."""

    def __init__(self, pace: float) -> None:
        super().__init__(daemon=True)
        self.pace = pace
        self.started = threading.Event()
        self.ended = threading.Event()
        self.pid = 0
        self.exit_status = -1
        self.peak_rss_kib = 0
        self.seconds = 0.0
        self.paused_seconds = 0.0

    def run(self) -> None:
        command = [sys.executable, "manage.py", "fanfold", "purge", "--older-than", "5d",
                   "--pace", repr(self.pace)]  # fmt: skip
        env = child_env(PGAPPNAME=PURGE_APPLICATION)
        began = time.monotonic()
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        self.pid = process.pid
        self.started.set()
        # The child's VmHWM, sampled while it runs: wait4's ru_maxrss would count this
        # process's own peak too (Linux keeps a parent's high-water mark across the exec).
        status_file = Path(f"/proc/{process.pid}/status")
        while True:
            pid, status, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            with contextlib.suppress(OSError, IndexError, ValueError):
                kib = int(status_file.read_text().split("VmHWM:")[1].split()[0])
                self.peak_rss_kib = max(self.peak_rss_kib, kib)
            time.sleep(0.2)
        self.seconds = time.monotonic() - began - self.paused_seconds
        self.exit_status = os.waitstatus_to_exitcode(status)
        self.ended.set()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The purge process stopped (SIGSTOP) between two of its transactions for the block,
        then continued. Stopped inside one, it would hold that transaction's snapshot for the
        whole block, and no row version the live runs leave behind could be pruned meanwhile:
        the rounds "without the purge" ran at a third of the full database's rate."""
        began = time.monotonic()
        for _ in range(_TRIES):
            self._signal(signal.SIGSTOP)
            if self.ended.is_set() or not _in_transaction():
                break
            self._signal(signal.SIGCONT)
            time.sleep(0.01)
        try:
            yield
        finally:
            self._signal(signal.SIGCONT)
            self.paused_seconds += time.monotonic() - began

    def _signal(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # it ended (and was reaped) meanwhile
            os.kill(self.pid, number)
