"""A message of several runs' starts: its worker executes them one after another.

The background publisher combines the start messages it holds at send time into one message
of many run ids (runtime.core.run_batches), so a stream of short runs (Django tasks) costs a
worker one broker message, one hop to a pool process and one acknowledgement per batch
instead of per run. The batch's runs are claimed together first, in one round trip
(runtime.store.runs.run_claims), each under its own lease token, except those this thread
keeps parked (runtime.warm: a batch of wakes), claimed at their turn with the history's new
records only; a run that cannot be claimed
then is skipped, as its own message would skip it (the leases of those not started yet are
not renewed: see _ClaimedAhead). Each run claimed is then executed as its
own message would execute it (`executor.execute_claimed`): its own lease, its own
checkpoints, except that a run's end does not wait for its own durable commit: the batch
waits once, at its end, for all of its runs' ends (runtime.durable.run_ends), which the
checkpoint writer commits in groups meanwhile. A crash mid-batch leaves the runs not yet
finished claimable (the message is not acknowledged before the batch's ends are committed,
so it comes back; the run sweep sends them again anyway): a failure gives back the leases of
the runs it leaves unexecuted at once, and a killed worker's leases are freed when the run
sweep finds its liveness lock gone (runtime.leases.liveness), or expire. A run whose end
was committed is skipped.

Slow runs must still spread over every worker: once the batch's step bodies have run
RUN_BATCH_SECONDS (their own time: runtime.durable.body_time), the runs not yet started are
given back and sent again on their own (combined again by this process's publisher), and the
batch ends.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

from runtime import conf, dispatch, executor
from runtime.core.clock import current_time
from runtime.durable import body_time
from runtime.leases.keepers import run_leases
from runtime.leases.liveness import process_key
from runtime.store.lifecycle.leases import give_back_run_leases
from runtime.store.runs.run_claims import Claimed, claim_runs_with_history
from runtime.warm.cache import warm_runs

# How long a batch waits for the runs it sends on to leave (then the run sweep has them).
SEND_ON_SECONDS = 10.0


def execute_batch(run_ids: Sequence[uuid.UUID], priority: int = 0) -> str:
    """Execute `run_ids` in turn; says how each went, as "completed:19,skipped:1" (the runs
    sent on again count as "sent")."""
    budget = conf.get().RUN_BATCH_SECONDS
    outcomes: Counter[str] = Counter()
    with executor.ends_together(), body_time.counted() as bodies, _claimed(run_ids) as ahead:
        for index, run_id in enumerate(run_ids):
            if index and bodies.seconds > budget:
                ahead.give_back()
                for rest in run_ids[index:]:
                    dispatch.enqueue_run_soon(rest, priority=priority)
                outcomes["sent"] += len(run_ids) - index
                break
            outcomes[ahead.execute(run_id).outcome.value] += 1
    if outcomes["sent"]:
        # Sent before the batch's message is acknowledged: a crash now leaves no run unsent.
        dispatch.flush(SEND_ON_SECONDS)
    return ",".join(f"{label}:{count}" for label, count in sorted(outcomes.items()))


class _ClaimedAhead:
    """A batch's runs as claimed at its start, each executed (or given back) once.

    The leases of the runs not started yet are not renewed: behind a slow body they expire,
    and the run sweep hands those runs to other workers, as it did when each run was claimed
    at its turn. A run is executed on its claim of the batch's start only within a third of
    a lease of it (the lease keeper renews it in time); later, the runs left are given back
    and claimed one by one.
    """

    def __init__(self, run_ids: Sequence[uuid.UUID]) -> None:
        # A run this thread keeps parked (runtime.warm) is claimed at its turn, with only the
        # history's tail: claimed here with its whole history, its warm copy would be dropped.
        warm = warm_runs()
        self._tokens = {run_id: secrets.token_hex(16) for run_id in run_ids if run_id not in warm}
        self._found: Claimed = {}
        self._claimed_at = 0.0

    def claim(self) -> None:
        claims = list(self._tokens.items())
        self._claimed_at = _clock()
        self._found = claim_runs_with_history(claims, current_time(), process_key())

    def execute(self, run_id: uuid.UUID) -> executor.Execution:
        if _clock() - self._claimed_at > conf.get().LEASE_SECONDS / 3:
            self.give_back()
            self._tokens.clear()  # the runs left are claimed at their turn
        token = self._tokens.pop(run_id, None)
        if token is None:  # parked here, or the same run twice in one message: on its own
            return executor.execute(run_id)
        found = self._found.pop(run_id, None)
        if found is None:
            return executor.Execution(executor.ExecutionOutcome.SKIPPED)
        run_leases.hold(token)
        return executor.execute_claimed(run_id, token, *found)

    def give_back(self) -> None:
        """Give back the leases of the runs claimed and not executed (another worker may
        claim them at once; one whose lease expired and was taken is left alone)."""
        held = [(run_id, self._tokens[run_id]) for run_id in self._found]
        self._found = {}
        if held:
            give_back_run_leases(held)


def _clock() -> float:
    return time.monotonic()


@contextmanager
def _claimed(run_ids: Sequence[uuid.UUID]) -> Iterator[_ClaimedAhead]:
    ahead = _ClaimedAhead(run_ids)
    ahead.claim()
    try:
        yield ahead
    finally:
        with suppress(Exception):  # a failure already on its way matters more
            ahead.give_back()
