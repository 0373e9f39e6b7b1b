"""The main thread, where signal handlers raise (Celery's soft time limit), cannot wedge the
writer: neither an exception landing anywhere in write() nor a wake-up it loses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from runtime.checkpoint import BatchLimits, Checkpoint, CheckpointWriter, MemorySink

# Run in a child process: a wedged writer would hang the caller, and the child can be killed.
INTERRUPTED_WRITES = """
import random, signal, sys, time
from runtime.checkpoint import BatchLimits, Checkpoint, CheckpointWriter, MemorySink
from checkpoint_fakes import in_thread

class SoftTimeLimit(Exception):
    pass

armed = [False]

def handler(signum, frame):
    if armed[0]:
        raise SoftTimeLimit

signal.signal(signal.SIGALRM, handler)
sink = MemorySink()
writer = CheckpointWriter(sink, BatchLimits(async_window=0.0))
writer.write(Checkpoint("warm", 0))  # its thread starts uninterrupted, as in a worker
shuffle = random.Random(7)
interrupted = 0
deadline = time.monotonic() + 2.0
i = 0
while time.monotonic() < deadline:
    i += 1
    try:
        armed[0] = True
        signal.setitimer(signal.ITIMER_REAL, shuffle.uniform(1e-6, 1e-4))
        writer.write(Checkpoint(f"s{i}", i))
    except Exception:  # the interrupt, or what it broke; the writer must go on anyway
        interrupted += 1
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
assert in_thread(lambda: writer.write(Checkpoint("after", "pool thread"))) is None
writer.write(Checkpoint("after", "main thread"))
writer.close(timeout=10)
assert [c.payload for c in sink.checkpoints][-2:] == ["pool thread", "main thread"]
print("interrupted", interrupted)
"""


def test_exceptions_raised_into_main_thread_writes_never_wedge_the_writer() -> None:
    here = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parents[2]), str(here)])}
    try:
        child = subprocess.run(
            [sys.executable, "-c", INTERRUPTED_WRITES],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired as wedged:
        raise AssertionError(f"the writer wedged: {wedged.stderr!r}") from None

    assert child.returncode == 0, child.stderr
    assert int(child.stdout.split()[-1]) > 0  # the timer did interrupt writes


def test_a_lost_wake_up_delays_a_checkpoint_by_at_most_the_idle_look() -> None:
    sink = MemorySink()
    writer = CheckpointWriter(sink, BatchLimits(async_window=0.0))
    writer.barrier("warm")  # the writer thread is idle now
    writer.submit(Checkpoint("warm", 0))
    writer.barrier("warm")
    notify = writer.intake._cond.notify
    dropped: list[int] = []

    def lose_first(n: int = 1) -> None:
        if not dropped:
            dropped.append(n)  # as if an exception had cut the put short
            return
        notify(n)

    writer.intake._cond.notify = lose_first  # type: ignore[method-assign]
    writer.submit(Checkpoint("late", 1))

    give_up = time.monotonic() + 10
    while [c.payload for c in sink.checkpoints] != [0, 1] and time.monotonic() < give_up:
        time.sleep(0.01)
    assert dropped and [c.payload for c in sink.checkpoints] == [0, 1]
    writer.close()
