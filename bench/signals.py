"""`bench signals`: runs resumed by signals against runs resumed by callback posts, and the
latency of an emit while many runs wait on other matches.

Resume: `runs` runs each wait for their own signal (`match={"order_id": ...}`); once all of
them wait, this process emits `runs` signals one after the other, and the figure is the time
from the first emit to the last run's end (the runs' own timestamps). The same runs waiting for
a callback instead, resumed by `runs` posts (`post_callback`, as the callback endpoint does),
are the baseline. Rounds alternate the two sides on the same workers.

Emit latency: `waiting` more runs wait on order ids nobody emits; then `samples` emits of other
order ids are timed one by one in this process (each looks up the hashed match keys, finds no
wait and returns). The benchmark's runs are deleted at the end.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from django.db import connection
from django.db.models import Max
from django.utils import timezone

from bench import environment, signal_workflows
from bench.environment import Pool
from bench.sequential import bare_commit_rate
from bench.stats import median, p50_p95
from runtime import emit_signal
from runtime.handles import start
from runtime.models import Run, RunStatus
from runtime.services import post_callback
from runtime.testing import callback_token

WARM_UP_RUNS = 20
START_BATCH = 100
_DELETE_BATCH = 1000


def _wait_for(what: str, ids: list[uuid.UUID], status: str, timeout: float) -> None:
    """Poll (every 50 ms: a count over the ids) until every run is in `status`."""
    deadline = time.monotonic() + timeout
    while Run.objects.filter(id__in=ids, status=status).count() < len(ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _finished_ms(ids: list[uuid.UUID], began: Any, timeout: float) -> float:
    _wait_for("the runs to complete", ids, RunStatus.COMPLETED, timeout)
    last = Run.objects.filter(id__in=ids).aggregate(last=Max("finished_at"))["last"]
    return round((last - began).total_seconds() * 1000, 1)


def _started(count: int, start_one: Callable[[int], uuid.UUID], timeout: float) -> list[uuid.UUID]:
    """Start `count` runs, `START_BATCH` at a time, each batch waiting before the next starts.

    Not all at once: a run still pending after the sweep's grace period is sent again (the
    sweep's backstop for a lost message), so a backlog of thousands would fill the queue with
    duplicates that the workers then skip, ahead of the messages being measured.
    """
    ids: list[uuid.UUID] = []
    for first in range(0, count, START_BATCH):
        batch = [start_one(i) for i in range(first, min(first + START_BATCH, count))]
        _wait_for("the runs to wait", batch, RunStatus.WAITING, timeout)
        ids += batch
    return ids


def _signal_side(runs: int, name: str, timeout: float, emitters: int = 1) -> dict[str, Any]:
    """`runs` runs each wait for their own signal, then `runs` signals are emitted by
    `emitters` threads of this process at once (each its own share, one after the other)."""
    tag = uuid.uuid4().hex[:8]
    orders = [f"{tag}-{i}" for i in range(runs)]

    def one(i: int) -> uuid.UUID:
        return start(signal_workflows.wait_signal, name, orders[i]).id

    ids = _started(runs, one, timeout)
    began = timezone.now()
    if emitters <= 1:
        took = _emit_all(name, orders)
    else:
        shares = [orders[i::emitters] for i in range(emitters)]
        with ThreadPoolExecutor(emitters, thread_name_prefix="bench-emit") as pool:
            took = [ms for share in pool.map(partial(_emit_all, name), shares) for ms in share]
    sent_ms = (timezone.now() - began).total_seconds() * 1000
    return {"resumed_ms": _finished_ms(ids, began, timeout), "sent_ms": round(sent_ms, 1),
            "emitters": max(emitters, 1), "emit_ms": p50_p95(took), "ids": ids}  # fmt: skip


def _emit_all(name: str, orders: list[str]) -> list[float]:
    """Emit each order's signal in turn; each emit's time (ms). In an emitter thread its
    database connection is closed at the end."""
    took: list[float] = []
    try:
        for order in orders:
            t0 = time.perf_counter()
            delivered = emit_signal(name, {"order_id": order, "amount": 10})
            took.append((time.perf_counter() - t0) * 1000)
            if delivered != 1:
                raise RuntimeError(f"the signal for {order} reached {delivered} runs, not 1")
    finally:
        if threading.current_thread() is not threading.main_thread():
            connection.close()
    return took


def _callback_side(runs: int, timeout: float) -> dict[str, Any]:
    ids = _started(runs, lambda i: start(signal_workflows.wait_callback).id, timeout)
    # Rows keep a token's digest only: each token is derived again, as the workflow has it.
    tokens = [callback_token(run_id) for run_id in ids]
    took: list[float] = []
    began = timezone.now()
    for token in tokens:
        t0 = time.perf_counter()
        post_callback(str(token), result={"amount": 10})
        took.append((time.perf_counter() - t0) * 1000)
    sent_ms = (timezone.now() - began).total_seconds() * 1000
    return {"resumed_ms": _finished_ms(ids, began, timeout), "sent_ms": round(sent_ms, 1),
            "post_ms": p50_p95(took), "ids": ids}  # fmt: skip


def _emit_latency(waiting: int, samples: int, name: str, timeout: float) -> dict[str, Any]:
    """`samples` emits timed one by one while `waiting` runs wait on other order ids."""

    def one(i: int) -> uuid.UUID:
        return start(signal_workflows.wait_signal, name, f"waiting-{i}").id

    ids = _started(waiting, one, timeout)
    took: list[float] = []
    for i in range(samples):
        t0 = time.perf_counter()
        delivered = emit_signal(name, {"order_id": f"nobody-{i}", "amount": 10})
        took.append((time.perf_counter() - t0) * 1000)
        if delivered:
            raise RuntimeError(f"an unmatched emit reached {delivered} runs")
    # The machine's floor at that moment: an emit commits its signal, so it costs at least one
    # commit (and a shared machine's commit time drifts several-fold within a session).
    rate = bare_commit_rate(200)
    floor = round(1000 / rate, 3) if rate else None
    return {"waiting": waiting, "samples": samples, "emit_ms": p50_p95(took),
            "bare_commit_ms": floor, "ids": ids}  # fmt: skip


def _delete(ids: list[uuid.UUID]) -> None:
    for i in range(0, len(ids), _DELETE_BATCH):
        Run.objects.filter(id__in=ids[i : i + _DELETE_BATCH]).delete()


def run_signals(
    runs: int, waiting: int, samples: int, repeat: int, timeout: float, pool: Pool
) -> dict[str, Any]:
    """Resume `runs` runs by signals and by callback posts (`repeat` alternating rounds), then
    time `samples` emits while `waiting` runs wait on other matches."""
    name = f"bench.paid.{uuid.uuid4().hex[:8]}"  # this run's own: no other waits of earlier runs
    rounds: list[dict[str, Any]] = []
    created: list[uuid.UUID] = []
    env = {"FANFOLD_WORKFLOW_MODULES": signal_workflows.__name__}
    with environment.workers(pool, **env):
        try:
            created += _signal_side(WARM_UP_RUNS, name, timeout)["ids"]  # connections, prepares
            created += _callback_side(WARM_UP_RUNS, timeout)["ids"]
            for i in range(repeat):
                sides = {"signals": lambda: _signal_side(runs, name, timeout),
                         "callbacks": lambda: _callback_side(runs, timeout)}  # fmt: skip
                order = list(sides) if i % 2 == 0 else list(reversed(sides))
                result = {side: sides[side]() for side in order}
                for side in result.values():
                    created += side.pop("ids")
                rounds.append(result)
            latency = _emit_latency(waiting, samples, name, timeout)
            created += latency.pop("ids")
        finally:
            _delete(created)
    return _report(runs, pool, rounds, latency)


def _report(
    runs: int, pool: Pool, rounds: list[dict[str, Any]], latency: dict[str, Any]
) -> dict[str, Any]:
    signals = median([r["signals"]["resumed_ms"] for r in rounds])
    callbacks = median([r["callbacks"]["resumed_ms"] for r in rounds])
    return {
        "scenario": "signals",
        **environment.describe(),
        **pool.describe(),
        "runs": runs,
        "repeat": len(rounds),
        "signals_resumed_ms": signals,
        "callbacks_resumed_ms": callbacks,
        "ratio": round(signals / callbacks, 3),
        "rounds": [
            {
                "signals": r["signals"],
                "callbacks": r["callbacks"],
                "ratio": round(r["signals"]["resumed_ms"] / r["callbacks"]["resumed_ms"], 3),
            }
            for r in rounds
        ],
        "emit_latency": latency,
    }
