"""`bench resume`: what a resume of a long-lived run costs at its start and at its end, with the
warm cache (runtime.warm) and without it, and signal resumes across many runs.

Long-lived runs: one run takes `messages` messages one by one, each answered with a value
(`bench.update.counter_by_message`: a `send`, then `get_value(wait=...)` of the answer), and one
takes as many updates (`bench.update.counter`, `RunHandle.update()`); each round trip is timed,
and the figures are the p50 of the first tenth and of the last tenth: a resume that replays the
whole history grows slower with it, a warm one should not. Signal resumes: `runs` runs each
wait for their own signal, then `runs` signals are emitted by `emitters` threads at once (one
emit is two commits and a broker send, so one thread emitting one signal after the other
measures its own emits rather than the workers' resumes), and the figure is the time from the
first emit to the last run's end (`bench signals`' signal side); `sent_ms` is how long the
emits took, `emit_ms` one emit's p50 and p95.

Each side runs on workers of its own: the warm side as configured, the other with
FANFOLD_WARM_RUNS=0 (every resume replays). Without a routing of resumes to the worker process
that holds the run warm, a resume lands on any of the pool's processes; one that holds the run
from an earlier resume catches up from its records (runtime.warm.passes).
"""

from __future__ import annotations

import uuid
from typing import Any

from bench import environment, signal_workflows, update_workflows
from bench.environment import Pool
from bench.signals import WARM_UP_RUNS, _delete, _signal_side
from bench.stats import percentile
from bench.updates import _message_side, _update_side


def _tenths(took: list[float]) -> dict[str, float]:
    """The p50 of the first and of the last tenth of the round trips, and their ratio."""
    tenth = max(len(took) // 10, 1)
    first, last = percentile(took[:tenth], 50), percentile(took[-tenth:], 50)
    return {
        "first_tenth_p50_ms": round(first, 2),
        "last_tenth_p50_ms": round(last, 2),
        "last_over_first": round(last / first, 3) if first else 0.0,
        "p50_ms": round(percentile(took, 50), 2),
    }


def _side(
    messages: int, runs: int, timeout: float, emitters: int
) -> tuple[dict[str, Any], list[uuid.UUID]]:
    created: list[uuid.UUID] = []
    name = f"bench.resume.{uuid.uuid4().hex[:8]}"
    try:
        created += _signal_side(WARM_UP_RUNS, name, timeout)["ids"]  # connections, prepares
        by_message, rid = _message_side(messages, timeout)
        created.append(rid)
        by_update, rid = _update_side(messages, timeout)
        created.append(rid)
        signals = _signal_side(runs, name, timeout, emitters)
        created += signals.pop("ids")
    except BaseException:
        _delete(created)
        raise
    per_resume = round(signals["resumed_ms"] / runs, 3)
    report = {
        "messages": _tenths(by_message),
        "updates": _tenths(by_update),
        "signals": {**signals, "per_resume_ms": per_resume},
    }
    return report, created


def run_resume(
    messages: int, runs: int, timeout: float, pool: Pool, emitters: int = 8
) -> dict[str, Any]:
    """The long-lived runs and the signal resumes, warm and with the cache off."""
    modules = f"{update_workflows.__name__},{signal_workflows.__name__}"
    sides: dict[str, Any] = {}
    for label, extra in (("warm", {}), ("cache_off", {"FANFOLD_WARM_RUNS": "0"})):
        with environment.workers(pool, FANFOLD_WORKFLOW_MODULES=modules, **extra):
            sides[label], created = _side(messages, runs, timeout, emitters)
        _delete(created)
    return {
        "scenario": "resume",
        **environment.describe(),
        **pool.describe(),
        "messages": messages,
        "runs": runs,
        "emitters": emitters,
        **sides,
    }
