"""This process as the records name the worker that did something: `host:pid`."""

from __future__ import annotations

import os
import socket

_known: str | None = None


def worker_id() -> str:
    """This worker process, as `run_started` and `step_started` events and a Django task
    result's `worker_ids` name it."""
    global _known
    if _known is None:  # named once, and again in a forked child (below)
        _known = f"{socket.gethostname()}:{os.getpid()}"
    return _known


def _forked() -> None:
    global _known
    _known = None


# Not os.getpid() on every call (a system call, and this is on every step's start): a forked
# child forgets its parent's name instead.
os.register_at_fork(after_in_child=_forked)
