"""What drives runs in this thread while a caller waits on a handle: nothing, unless a test
environment (runtime.testing.WorkflowEnvironment) installed its driver, which runs the test's
runs on the test's thread and virtual clock until the awaited one finishes."""

from __future__ import annotations

import uuid
from collections.abc import Callable

# Called with the run's id and the wait's timeout; returns once the run finished, or raises.
Driver = Callable[[uuid.UUID, float | None], None]
_driver: Driver | None = None


def install_driver(driver: Driver | None) -> Driver | None:
    """Make `RunHandle.wait()` call `driver` first; returns the one it replaces."""
    global _driver
    previous, _driver = _driver, driver
    return previous


def drive(run_id: uuid.UUID, timeout: float | None) -> None:
    """Drive the run in this thread with the installed driver, if there is one."""
    if _driver is not None:
        _driver(run_id, timeout)
