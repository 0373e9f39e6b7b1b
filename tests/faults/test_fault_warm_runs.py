"""SIGKILL of a worker that holds runs warm (parked at their waits, runtime.warm), some of them
mid-resume: none is lost. Their next resumes replay on the other worker from the record, and
each message's step runs once.

The doomed worker runs alone while the runs take their first messages, so every parked copy is
its own; that some resumes were warm shows as runs whose code started fewer times than they
resumed (a warm resume goes on from the parked call, a replay starts the code again). The
resumes sent after the kill go to the dead node's own queue (runtime.warm.routing), which
nobody consumes any more: the survivor's run sweep sends them on to any worker once they have
waited FANFOLD_WARM_ROUTE_SECONDS.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from runtime import send, start
from runtime.models import Run, Step
from tests.faults import fault_workflows as flows
from tests.faults.fault_checks import assert_each_step_completed_once, wait_for
from tests.support.workers import running_worker

# Liveness locks let the survivor take the dead worker's resumes in flight in seconds.
ENV = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, "FANFOLD_LIVENESS_LOCKS": "on",
       "FANFOLD_LEASE_SECONDS": "30", "FANFOLD_SWEEP_INTERVAL": "5"}  # fmt: skip
RUNS = 20
MESSAGES = 6
WARM_ROUNDS = 3  # messages taken while the doomed worker runs alone


def _ticks(counters: Any) -> int:
    return int(counters.llen(flows.TICKS))


def _all_waiting(run_ids: list[Any], steps_each: int) -> bool:
    waiting = Run.objects.filter(id__in=run_ids, status="waiting").count() == len(run_ids)
    done = Step.objects.filter(run_id__in=run_ids, name=flows.tick.name, status="completed")
    return waiting and done.count() == steps_each * len(run_ids)


def _send_round(run_ids: list[Any], number: int) -> None:
    for run_id in run_ids:
        send(run_id, "m", number, idempotency_key=f"{run_id}:{number}")


def test_fault_worker_sigkill_with_warm_runs_loses_none(counters_redis: Any) -> None:
    with running_worker("fault-warm-doomed", "prefork", 2, **ENV) as doomed:
        run_ids = [start(flows.chat, MESSAGES).id for _ in range(RUNS)]
        wait_for(lambda: _all_waiting(run_ids, 0), 60, "every run to wait for its first message")
        for number in range(1, WARM_ROUNDS + 1):
            _send_round(run_ids, number)
            wait_for(lambda n=number: _all_waiting(run_ids, n), 60, f"round {number} answered")
        starts = Counter(s.decode() for s in counters_redis.lrange(flows.STARTS, 0, -1))
        # Every resume that replayed started the code again: fewer starts than resumes means
        # warm runs were parked in the doomed worker when it died.
        assert sum(starts.values()) < RUNS * (1 + WARM_ROUNDS), starts
        with running_worker("fault-warm-survivor", "prefork", 2, **ENV):
            before = _ticks(counters_redis)
            _send_round(run_ids, WARM_ROUNDS + 1)
            wait_for(lambda: _ticks(counters_redis) > before, 30, "a resume under way")
            doomed.kill()  # parked runs, and resumes in flight, die with it
            for number in range(WARM_ROUNDS + 2, MESSAGES + 1):
                _send_round(run_ids, number)
            wait_for(
                lambda: Run.objects.filter(id__in=run_ids, status="completed").count() == RUNS,
                180,
                "every run to complete on the survivor",
            )
    total = sum(range(1, MESSAGES + 1))
    for run_id in run_ids:
        assert_each_step_completed_once(run_id)
        assert Run.objects.get(id=run_id).result == total
    ticks = Counter(int(t) for t in counters_redis.lrange(flows.TICKS, 0, -1))
    # Each message's step body ran once per run, whatever was in flight at the kill: only a
    # step the dead worker had begun (its second attempt recorded) may have run its body twice,
    # if the kill fell after the body's record and before its completion's commit.
    retried = Step.objects.filter(run_id__in=run_ids, attempt__gt=1).count()
    assert RUNS * MESSAGES <= sum(ticks.values()) <= RUNS * MESSAGES + retried
    assert set(ticks) == set(range(1, MESSAGES + 1))
    executions = RUNS * (1 + WARM_ROUNDS)  # a start and WARM_ROUNDS resumes a run
    print(
        f"\nSIGKILL of a worker holding warm runs: the code started {sum(starts.values())} "
        f"times in {executions} executions before it; {retried} step(s) it left begun"
    )
