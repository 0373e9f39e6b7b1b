"""What drives runs in this thread while a caller waits on a handle: nothing, unless a test
environment (runtime.testing.WorkflowEnvironment) installed its driver, which runs the test's
runs on the test's thread and virtual clock until the awaited one finishes (or, for a caller
waiting on an update's answer, until `until()` is true)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

# Called with the run's id, the wait's timeout and what ends the wait early (None: the run's
# end); returns once the run finished or `until()` holds, or raises.
Driver = Callable[[uuid.UUID, float | None, Callable[[], bool] | None], None]
_driver: Driver | None = None


def install_driver(driver: Driver | None) -> Driver | None:
    """Make `RunHandle.wait()` and an update's wait call `driver` first; returns the one it
    replaces."""
    global _driver
    previous, _driver = _driver, driver
    return previous


def drive(
    run_id: uuid.UUID, timeout: float | None, until: Callable[[], bool] | None = None
) -> None:
    """Drive the run in this thread with the installed driver, if there is one, until it
    finished or `until()` holds."""
    if _driver is not None:
        _driver(run_id, timeout, until)
