"""A message of several runs' starts: its worker executes them one after another.

The background publisher combines the start messages it holds at send time into one message
of many run ids (runtime.core.run_batches), so a stream of short runs (Django tasks) costs a
worker one broker message, one hop to a pool process and one acknowledgement per batch
instead of per run. Each run is executed as its own message would execute it
(`executor.execute`): its own lease claim, its own checkpoints, except that a run's end does
not wait for its own durable commit: the batch waits once, at its end, for all of its runs'
ends (runtime.durable.run_ends), which the checkpoint writer commits in groups meanwhile. A
crash mid-batch leaves the runs not yet finished claimable (the message is not acknowledged
before the batch's ends are committed, so it comes back; the run sweep sends them again
anyway), and a run whose end was committed is skipped.

Slow runs must still spread over every worker: once the batch's step bodies have run
RUN_BATCH_SECONDS (their own time: runtime.durable.body_time), the runs not yet started are
sent again on their own (combined again by this process's publisher) and the batch ends.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence

from runtime import conf, dispatch, executor
from runtime.durable import body_time

# How long a batch waits for the runs it sends on to leave (then the run sweep has them).
SEND_ON_SECONDS = 10.0


def execute_batch(run_ids: Sequence[uuid.UUID], priority: int = 0) -> str:
    """Execute `run_ids` in turn; says how each went, as "completed:19,skipped:1" (the runs
    sent on again count as "sent")."""
    budget = conf.get().RUN_BATCH_SECONDS
    outcomes: Counter[str] = Counter()
    with executor.ends_together(), body_time.counted() as bodies:
        for index, run_id in enumerate(run_ids):
            if index and bodies.seconds > budget:
                for rest in run_ids[index:]:
                    dispatch.enqueue_run_soon(rest, priority=priority)
                outcomes["sent"] += len(run_ids) - index
                break
            outcomes[executor.execute(run_id).outcome.value] += 1
    if outcomes["sent"]:
        # Sent before the batch's message is acknowledged: a crash now leaves no run unsent.
        dispatch.flush(SEND_ON_SECONDS)
    return ",".join(f"{label}:{count}" for label, count in sorted(outcomes.items()))
