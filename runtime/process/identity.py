"""This process as the records name the worker that did something: `host:pid`."""

from __future__ import annotations

import os
import socket

_known: tuple[int, str] | None = None


def worker_id() -> str:
    """This worker process, as `run_started` and `step_started` events and a Django task
    result's `worker_ids` name it."""
    global _known
    pid = os.getpid()
    if _known is None or _known[0] != pid:  # a forked child names itself
        _known = (pid, f"{socket.gethostname()}:{pid}")
    return _known[1]
