"""`BackgroundLoop`: the one way Fanfold runs a periodic thread.

Every periodic thread (the run sweep, the fan-out sweep, the two lease keepers) shares one
start, fork and stop policy: `start()` is idempotent within a process and starts a fresh
thread in a forked child (a prefork worker inherits the parent's objects but not its
threads); a failing pass is logged and its database connection closed, and the loop goes on;
`stop()` ends it. A body may `retire()` the loop from inside a pass (a lease keeper with
nothing to keep); a `start()` after that begins a new thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from django.db import connection

log = logging.getLogger("fanfold.recovery")


class BackgroundLoop:
    """Calls `body()` every `interval()` seconds in a daemon thread named `name`."""

    def __init__(self, name: str, interval: Callable[[], float], body: Callable[[], object]):
        self.name = name
        self._interval = interval
        self._body = body
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self._stop = threading.Event()
        self._retired = False

    def start(self) -> None:
        """Start the thread unless this process already runs it."""
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive()
            if alive and self._pid == os.getpid() and not self._retired:
                return
            self._stop = threading.Event()
            self._retired = False
            self._pid = os.getpid()
            self._thread = threading.Thread(
                target=self._run, args=(self._stop,), name=self.name, daemon=True
            )
            self._thread.start()

    def retire(self) -> None:
        """From inside a pass: end the loop after it; a later `start()` begins a new one."""
        with self._lock:
            self._retired = True
            self._stop.set()

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive() and self._pid == os.getpid()

    def _run(self, stop: threading.Event) -> None:
        try:
            while not stop.wait(self._interval()):
                try:
                    self._body()
                except Exception:  # a database hiccup must not end the loop
                    log.exception("%s: pass failed", self.name)
                    connection.close()
        finally:
            connection.close()
