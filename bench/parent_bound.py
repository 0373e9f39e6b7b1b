"""`python -m bench.parent_bound PROGRAM ARGS...`: run PROGRAM in this process, to be ended
(SIGTERM, a warm shutdown for a Celery worker) when the process that started it exits.

The benchmark and the acceptance tests start their workers in sessions of their own, so that
a SIGKILL reaches a worker's whole process group and nothing else. Killed outright, or timed
out by a test, such a starter would leave its workers consuming the broker's queue, and they
would take the next benchmark's or test's messages. Linux's parent-death signal, which
survives the exec below, ends them instead; elsewhere this only runs PROGRAM.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def bind_to_parent(parent: int) -> None:
    """Ask for SIGTERM when the starter exits; exit now if it already has."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return  # not available: the worker runs unbound, as before
    if os.getppid() != parent:  # the starter was gone before the signal was asked for
        sys.exit(1)


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit("usage: python -m bench.parent_bound STARTER_PID PROGRAM [ARGS...]")
    bind_to_parent(int(argv[0]))
    os.execv(argv[1], argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
