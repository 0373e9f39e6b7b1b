"""`bench history`: sequential runs on an empty and a full database, and beside a purge.

The full database holds EVENTS events (5,000,000 by default) in finished runs of
EVENTS_PER_RUN events each, loaded with COPY (bench.history_load). DUE_EVENTS of them (all, up
to 5,000,000, by default) finished ten days ago, in that week: history within the default
retention (30 days), which the workers' own retention leaves alone, and which the bench's purge
retires. The rest, where EVENTS is larger, is kept history in older weeks that the purge must leave
(long-lived runs that finished lately), loaded once and reused by the next runs
(bench.history_kept): 50,000,000 events are 45,000,000 kept in nine weeks and a due week of
5,000,000, as an installation a year old retires a week beside the many it keeps. The loader
runs VACUUM ANALYZE on what it filled (as autovacuum would have, in a history that grew over
days) and the bench a CHECKPOINT, so the rounds do not pay the load's WAL.

One prefork worker (-c 2, the default pool) serves every phase; a round is one sequential run
of STEPS no-op steps, after a short uncounted one. The empty and the full database alternate,
ROUNDS rounds each (bench.history_conditions switches the loaded history out and in), and each
reports the median of its rounds (steps_per_second_empty, _full). Then `fanfold purge
--older-than 5d` deletes the due runs in a process of its own, and the rounds go in pairs: one
beside the purge and one with the purge stopped (SIGSTOP, then SIGCONT), their order
alternating; during_purge_to_full is the ratio of the two conditions' medians (each pair's
ratio is listed too). A pair counts only if its round beside the purge ended before the purge
did; the purge's rate leaves its paused time out. Then purge_runs_per_second, and the peak RSS
of the worker and of the purge.

`partitions` lists the history's partitions the load filled (estimated rows, MiB). Once the
workers are stopped, the WAL figures: a tenth of the due runs (5,000 at most) is loaded into a
week of its own and purged right after a CHECKPOINT, with nothing else running
(purge_wal_bytes_per_run: whole weeks where the history is partitioned), and the same again
deleted by rows alone (row_delete_wal_bytes_per_run, what every purge wrote before).
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from bench import environment
from bench.environment import Pool
from bench.history_conditions import HistorySwitch, bound
from bench.history_kept import KeptHistory, kept_history
from bench.history_load import WORKFLOW, load, settle, sizes, wal_per_run
from bench.history_purge import PurgeProcess
from bench.sequential import run_seconds, warm_up
from bench.stats import median
from runtime.handles import start
from runtime.lifecycle.retention import DEFAULT_PACE, older_than, purge
from runtime.models import Run
from runtime.store.lifecycle.partitions import is_partitioned, period_of
from runtime.store.lifecycle.purge import compress_wal

Rates = dict[str, list[float]]
WARM_UP_STEPS = 20


class _PeakRss(threading.Thread):
    """The highest VmHWM of the worker processes (the bench's children but the purge)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kib = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while True:
            self._sample()
            if self.stop.wait(0.5):
                return

    def _sample(self) -> None:
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                text = status.read_text()
            except OSError:
                continue
            if "celery" not in _cmdline(status.parent) or "VmHWM" not in text:
                continue
            kib = int(text.split("VmHWM:")[1].split()[0])
            self.peak_kib = max(self.peak_kib, kib)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _round(steps: int, timeout: float) -> float:
    """One sequential run of `steps` no-op steps on the bench's worker; its steps per second."""
    handle = start("examples.noop_loop", steps)
    handle.wait(timeout=timeout)  # woken by the run's end: no polling beside the worker
    return round(steps / run_seconds([handle]), 1)


def _measured(steps: int, timeout: float) -> float:
    """A round as every condition takes it: a short run first, uncounted (after a switch of
    the history the worker's prepared statements are planned again), then the round."""
    _round(WARM_UP_STEPS, timeout)
    return _round(steps, timeout)


def _alternating(switch: HistorySwitch, steps: int, rounds: int, timeout: float) -> Rates:
    """`rounds` rounds of the full and of the empty database, alternating full, empty, empty,
    full, ...: drift over the phase weighs on both alike."""
    rates: Rates = {"empty": [], "full": []}
    for cycle in range(rounds):
        for name in ("full", "empty") if cycle % 2 == 0 else ("empty", "full"):
            switch.switch(full=name == "full")
            rates[name].append(_measured(steps, timeout))
    return rates


def _pairs_beside(purge: PurgeProcess, steps: int, timeout: float) -> list[tuple[float, float]]:
    """Pairs of rounds while the purge lasts: one beside it, one with it paused, in turn first
    (beside, paused, paused, beside, ...). A pair counts only if its round beside the purge
    ended before the purge did."""
    pairs: list[tuple[float, float]] = []
    purge.started.wait()
    while not purge.ended.is_set():
        if len(pairs) % 2 == 0:
            beside = _measured(steps, timeout)
            if purge.ended.is_set():
                break
            with purge.paused():
                alone = _measured(steps, timeout)
        else:
            with purge.paused():
                alone = _measured(steps, timeout)
            beside = _measured(steps, timeout)
            if purge.ended.is_set():
                break
        pairs.append((beside, alone))
    return pairs


def _wal_compression() -> str:
    """What the purge's transactions compress their WAL with on this database ("" for none)."""
    with transaction.atomic():
        return compress_wal(connection.alias)


def _ratio(part: float | None, whole: float | None) -> float | None:
    return round(part / whole, 3) if part and whole else None


def _wal_figures(runs: int, events: int) -> dict[str, Any]:
    """The WAL per retired run of the purge as it runs (whole weeks where partitioned) and of
    row deletes alone, each on `runs` runs of a week of their own, with no other work."""
    days = timezone.now() - timedelta(days=17), timezone.now() - timedelta(days=24)
    load(runs, events, days[0])
    retire, retire_server = wal_per_run(runs, lambda: purge(older_than(timedelta(days=5))).runs)
    load(runs, events, days[1])
    rows = older_than(timedelta(days=5))
    deleted, deleted_server = wal_per_run(runs, lambda: purge(Q(pk__in=[]), row_rule=rows).runs)
    own = retire is not None and deleted is not None
    retire, deleted = (retire, deleted) if own else (retire_server, deleted_server)
    return {
        "wal_runs": runs,
        "wal_counted": "this database's records (pg_waldump)" if own else "the server's",
        "purge_wal_bytes_per_run": retire,
        "row_delete_wal_bytes_per_run": deleted,
        "wal_row_deletes_to_purge": _ratio(deleted, retire),
        "purge_wal_bytes_per_run_server": retire_server,
        "row_delete_wal_bytes_per_run_server": deleted_server,
    }


def run_history(
    events_total: int,
    events: int,
    steps: int,
    rounds: int,
    timeout: float,
    pace: float = DEFAULT_PACE,
    due_events: int | None = None,
) -> dict[str, Any]:
    """The figures of `bench history` (see the module's docstring): `events_total` events
    in runs of `events` events, `due_events` of them (default: all) due for the purge."""
    runs = max(events_total // events, 1)
    Run.objects.filter(workflow=WORKFLOW).delete()
    rss, purge_process = _PeakRss(), PurgeProcess(pace)
    now = timezone.now()
    moment = now - timedelta(days=10)
    week = period_of(moment)
    partitioned = is_partitioned(connection.alias)
    due = min(max((due_events or events_total) // events, 1), runs) if partitioned else runs
    weeks = -(-(runs - due) // due)  # each kept week holds no more than the due one
    kept = KeptHistory([], "none")
    if partitioned:  # before the workers: their retention pass drops an empty past week
        kept = kept_history(runs - due, events, weeks, now)
        bound(week)
        load_seconds = load(due, events, moment)
    switch = HistorySwitch([*kept.periods, week])
    with environment.workers(Pool()):
        warm_up(timeout)
        rss.start()
        if switch.switchable:
            settled = settle()
            try:
                rates = _alternating(switch, steps, rounds, timeout)
            finally:
                switch.full()  # the history stays whole whatever fails
        else:
            settled = settle(vacuum=True)
            rates = {"empty": [_measured(steps, timeout) for _ in range(rounds)]}
            load_seconds = load(runs, events, moment)
            settled = settle() and settled
            rates["full"] = [_measured(steps, timeout) for _ in range(rounds)]
        partitions = sizes()
        empty, full = rates["empty"], rates["full"]
        purge_process.start()
        pairs = _pairs_beside(purge_process, steps, timeout)
        purge_process.ended.wait(timeout)
        rss.stop.set()
        rss.join()
    left = Run.objects.filter(workflow=WORKFLOW).count()
    wal = _wal_figures(max(min(due // 10, 5000), 1), events)
    purge = purge_process
    during, paused = [p[0] for p in pairs], [p[1] for p in pairs]
    phases = {"empty": empty, "full": full, "during": during, "paused": paused}
    medians = {name: round(median(rates), 1) if rates else None for name, rates in phases.items()}
    paired = [round(beside / alone, 3) for beside, alone in pairs]
    cycles = [round(f / e, 3) for f, e in zip(full, empty, strict=True)]
    return {
        "scenario": "history",
        "runs": runs,
        "events": runs * events,
        "events_per_run": events,
        "due_runs": due,
        "due_events": due * events,
        "kept_events": (runs - due) * events,
        "kept_weeks": len(kept.periods),
        "kept_history": kept.state,
        "kept_load_seconds": round(kept.load_seconds, 1),
        "partitions": partitions,
        "load_seconds": round(load_seconds, 1),
        "checkpointed": settled,
        "conditions": "alternating" if switch.switchable else "empty, then full",
        "steps": steps,
        "rounds": {"empty": empty, "full": full, "during_purge": during, "purge_paused": paused},
        "steps_per_second_empty": medians["empty"],
        "steps_per_second_full": medians["full"],
        "steps_per_second_during_purge": medians["during"],
        "steps_per_second_purge_paused": medians["paused"],
        "full_to_empty": _ratio(medians["full"], medians["empty"]),
        "full_to_empty_by_cycle": cycles,
        "during_purge_to_full": _ratio(medians["during"], medians["paused"]),
        "during_purge_to_full_by_pair": paired,
        "during_purge_to_full_pair_median": round(median(paired), 3) if paired else None,
        "during_purge_to_full_phase": _ratio(medians["during"], medians["full"]),
        "purge_pace": pace,
        "purge_wal_compression": _wal_compression(),
        "purge_runs_per_second": round((due - left) / purge.seconds, 1) if purge.seconds else None,
        "purge_exit_status": purge.exit_status,
        "purge_peak_rss_mib": round(purge.peak_rss_kib / 1024, 1),
        "worker_peak_rss_mib": round(rss.peak_kib / 1024, 1),
        "runs_left": left,
        **wal,
    }
