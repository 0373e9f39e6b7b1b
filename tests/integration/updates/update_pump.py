"""A pump thread that runs the InMemoryDispatcher's due executions while a test blocks in
`update()`."""

from __future__ import annotations

import contextlib
import threading

from django.db import connections

from runtime.testing import InMemoryDispatcher


class Pump:
    """Runs every due execution in a thread of its own until stopped."""

    def __init__(self, dispatcher: InMemoryDispatcher) -> None:
        self.dispatcher = dispatcher
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="update-pump", daemon=True)
        self.errors: list[BaseException] = []

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                # Delivers what is due; a timer's later wake-up is left for later passes.
                with contextlib.suppress(TimeoutError):
                    self.dispatcher.join(timeout=0.01)
                self._stop.wait(0.005)
        except BaseException as exc:  # reported by the fixture
            self.errors.append(exc)
        finally:
            connections.close_all()

    def start(self) -> Pump:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
