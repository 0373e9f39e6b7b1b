"""`manage.py bench`, run as a user runs it: its own worker processes, real Redis and PostgreSQL.

Small sizes only, and nothing here asserts on time: these check that every scenario runs and
reports what it promises (the counts it measures, the shape of its JSON).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from bench.history_kept import KEPT_WORKFLOW, clear
from bench.workers import ROOT, database_url
from runtime.models import Run
from tests.support.workers import running_worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis_transport]


def run_bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`manage.py bench ARGS` on the test database and broker."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    }
    return subprocess.run(
        [sys.executable, "manage.py", "bench", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def refused(*args: str) -> str:
    """The error output of a bench command that must fail."""
    done = run_bench(*args, timeout=120)
    assert done.returncode != 0
    return done.stderr


def bench(*args: str) -> dict[str, Any]:
    done = run_bench(*args, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_bench_seq_reports_steps_and_one_write_transaction_per_step(counters_redis: Any) -> None:
    report = bench("seq", "--steps", "40")

    assert (report["scenario"], report["database"], report["broker"]) == (
        "seq",
        "postgresql",
        "redis",
    )
    assert report["steps"] == 40 and report["steps_per_second"] > 0
    assert 0.9 <= report["transactions_per_step"] < 1.5  # a step's start and end commit together
    assert set(report["stso_ms"]) == {"p50", "p95"}
    assert report["bare_commit_per_second"] > 0


def test_bench_concurrent_group_commits_many_runs_on_threads(counters_redis: Any) -> None:
    report = bench("concurrent", "--runs", "8", "--steps", "20", "--pool", "threads")

    assert (report["pool"], report["concurrency"]) == ("threads", 8)
    assert report["steps"] == 160
    assert report["transactions_per_step"] < 1.0  # runs share transactions


def test_bench_concurrent_runs_on_prefork_by_default(counters_redis: Any) -> None:
    report = bench("concurrent", "--runs", "4", "--steps", "10")

    assert (report["pool"], report["workers"], report["concurrency"]) == ("prefork", 1, 2)
    assert report["steps"] == 40 and report["steps_per_second"] > 0


def test_bench_checkpoint_probe_never_waits_after_a_sync_checkpoint() -> None:
    report = bench("checkpoint", "--samples", "5")

    assert report["timed_waits_after_sync"] == 0
    assert report["samples"] == 5


def test_bench_fanout_publishes_in_batches_and_compares_with_both_baselines(
    counters_redis: Any,
) -> None:
    report = bench("fanout", "--branches", "120", "--repeat", "2")

    assert (report["pool"], report["workers"], report["concurrency"]) == ("prefork", 1, 2)
    # 120 branches, 25 a message (FANFOLD_BRANCH_CHUNK), in one publish request.
    assert (report["publish_requests"], report["publish_messages"]) == (1, 5)
    assert report["max_batch_size"] == 5
    assert report["repeat"] == 2 and len(report["pairs"]) == 2
    assert 0 < report["ttfs_ms"] <= report["ttls_ms"] <= report["fan_in_ms"]
    assert report["baseline_a_ms"] > 0 and report["baseline_b_ms"] > 0
    # Every branch, counted by the workers from what its message's task returned.
    assert report["consumed_messages"] >= 5 and report["consumed_branches"] >= 120
    pair = report["pairs"][0]
    assert pair["ratio_to_a"] == pytest.approx(pair["fan_in_ms"] / pair["baseline_a_ms"], rel=0.01)


def test_bench_fanout_runs_on_a_threads_pool_too(counters_redis: Any) -> None:
    report = bench("fanout", "--branches", "50", "--pool", "threads", "--concurrency", "4")

    assert (report["pool"], report["concurrency"], report["repeat"]) == ("threads", 4, 1)
    assert report["consumed_branches"] >= 50


def test_bench_seq_observe_compares_off_and_on_on_prefork_workers(counters_redis: Any) -> None:
    report = bench("seq", "--observe", "--steps", "30", "--pairs", "2", "--trace-ratio", "0.5")

    observed = report["observe"]
    assert report["pool"] == "prefork" and report["steps"] == 30
    # Both workers, one off and one on, took measured runs.
    assert len(observed["off_samples"]) == len(observed["on_samples"]) == observed["pairs"] == 2
    assert observed["cpu_figure"] == "worker_cpu_us_per_step"
    # Read from /proc for the worker and its prefork children; absent if that failed.
    assert all(isinstance(observed[k], float) for k in ("cpu_off", "cpu_on"))
    assert "overhead_pct" in observed and "instrumentation_us_per_step" in observed
    assert observed["trace_ratio"] == 0.5


def test_bench_stream_reports_write_to_read_latency(counters_redis: Any) -> None:
    report = bench("stream", "--chunks", "50", "--clients", "3", "--pause-ms", "1")

    assert (report["scenario"], report["chunks"], report["clients"]) == ("stream", 50, 3)
    latency = report["latency_ms"]
    assert set(latency) == {"p50", "p95"}
    assert 0 < latency["p50"] <= latency["p95"]


def test_bench_signals_resumes_by_signals_and_callbacks_and_cleans_up(counters_redis: Any) -> None:
    report = bench("signals", "--runs", "30", "--waiting", "40", "--samples", "20")

    assert (report["scenario"], report["runs"], report["pool"]) == ("signals", 30, "prefork")
    assert report["signals_resumed_ms"] > 0 and report["callbacks_resumed_ms"] > 0
    assert set(report["rounds"][0]) == {"signals", "callbacks", "ratio"}
    latency = report["emit_latency"]
    assert (latency["waiting"], latency["samples"]) == (40, 20)
    assert 0 < latency["emit_ms"]["p50"] <= latency["emit_ms"]["p95"]
    assert not Run.objects.filter(workflow__startswith="bench.signals.").exists()


def detached_history_tables() -> list[str]:
    """Tables named like the history's weekly partitions that are not partitions."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND NOT relispartition "
            "AND relname ~ '^runtime_[a-z_]+_h[0-9]{8}$'"
        )
        return [row[0] for row in cursor.fetchall()]


def test_bench_history_measures_and_purges_the_due_week_beside_the_kept_ones(
    counters_redis: Any,
) -> None:
    args = ("--events", "12000", "--due-events", "4000", "--events-per-run", "20")
    try:
        report = bench("history", *args, "--steps", "20", "--rounds", "2")
        kept = Run.objects.filter(workflow=KEPT_WORKFLOW).count()
    finally:
        clear()

    assert (report["scenario"], report["runs"], report["events_per_run"]) == ("history", 600, 20)
    assert (report["due_runs"], report["due_events"]) == (200, 4000)
    assert (report["kept_events"], report["kept_weeks"], report["kept_history"]) == (
        8000, 2, "loaded"
    )  # fmt: skip
    assert report["events"] == 12000 and report["wal_runs"] == 20
    assert report["partitions"] and all(p["rows"] >= 0 for p in report["partitions"])
    assert report["purge_wal_bytes_per_run"] > 0 and report["row_delete_wal_bytes_per_run"] > 0
    assert len(report["rounds"]["empty"]) == len(report["rounds"]["full"]) == 2
    assert report["steps_per_second_empty"] > 0 and report["steps_per_second_full"] > 0
    assert report["conditions"] == "alternating"  # the history switched out and in
    assert len(report["full_to_empty_by_cycle"]) == 2
    assert detached_history_tables() == []  # the switched history went back, and went
    during = report["rounds"]["during_purge"]  # however many rounds the purge outlived
    assert len(report["rounds"]["purge_paused"]) == len(during)  # each paired with a paused one
    assert len(report["during_purge_to_full_by_pair"]) == len(during)
    if during:
        assert report["steps_per_second_during_purge"] == round(statistics.median(during), 1)
        paused = report["steps_per_second_purge_paused"]
        assert report["during_purge_to_full"] == round(
            report["steps_per_second_during_purge"] / paused, 3
        )
    assert (report["purge_exit_status"], report["runs_left"]) == (0, 0)
    assert kept == 400  # the purge retired the due week and left the kept ones
    assert report["purge_runs_per_second"] > 0
    assert report["purge_peak_rss_mib"] > 0 and report["worker_peak_rss_mib"] > 0
    assert not Run.objects.filter(workflow="bench.history").exists()


def test_bench_worker_start_times_launch_to_ready_with_and_without_agents() -> None:
    report = bench("worker-start", "--rounds", "1")
    assert report["scenario"] == "worker-start" and len(report["ready_s_rounds"]) == 1
    assert report["ready_s"] > 0 and report["ready_with_agent_workflows_s"] > 0
    assert report["agent_libraries_import_s"] > 0 and report["agent_libraries_import_cpu_s"] > 0
    assert 0 < report["ready_cpu_s"] < report["ready_with_agent_workflows_cpu_s"]
    less = report["ready_with_agent_workflows_cpu_s"] - report["agent_libraries_import_cpu_s"]
    got = report["ready_with_agent_workflows_less_their_imports_cpu_s"]
    assert got == pytest.approx(less, abs=0.02)
    assert report["within_target"] == (report["ready_s"] <= report["target_s"])


def test_bench_rejects_a_bad_size() -> None:
    assert "--steps must be at least 1" in refused("seq", "--steps", "0")


@pytest.mark.parametrize("ratio", ["0", "1.5"])
def test_bench_rejects_a_trace_ratio_outside_zero_to_one(ratio: str) -> None:
    error = refused("seq", "--observe", "--trace-ratio", ratio)
    assert "--trace-ratio must be above 0 and at most 1" in error


def test_bench_replay_checks_every_seeded_run_and_cleans_up() -> None:
    report = bench("replay", "--runs", "30", "--steps", "4")

    assert (report["scenario"], report["runs"], report["steps_per_run"]) == ("replay", 30, 4)
    assert report["mismatched"] == 0
    assert report["runs_per_second"] > 0
    assert not Run.objects.exists()  # the seeded runs and their template are gone


def test_bench_upgrade_dry_runs_every_seeded_run_and_cleans_up() -> None:
    report = bench("upgrade", "--runs", "30", "--steps", "4")

    assert report["scenario"] == "versions upgrade --dry-run"
    assert (report["checked"], report["would_move"], report["refused"]) == (30, 30, 0)
    assert not Run.objects.exists()  # the seeded runs and their template are gone


def test_bench_seq_versions_alternates_unpinned_and_pinned_runs(counters_redis: Any) -> None:
    report = bench("seq", "--versions", "--steps", "20", "--pairs", "2")

    assert report["scenario"] == "versions seq" and report["steps"] == 20
    assert {side: len(rates) for side, rates in report["steps_per_second"].items()} == {
        "unpinned": 2,
        "pinned": 2,
    }
    assert report["ratio_pinned_to_unpinned"] > 0
    versions = list(Run.objects.values_list("app_version", flat=True))
    assert versions.count("") == 2  # the unpinned runs; the warm-up and 2 runs pinned
    assert len(versions) == 5 and len({v for v in versions if v}) == 1


def test_bench_seq_vs_dbos_alternates_fanfold_and_dbos_runs(counters_redis: Any) -> None:
    report = bench("seq", "--vs-dbos", "--steps", "20", "--pairs", "2")

    assert report["scenario"] == "seq vs DBOS" and report["steps"] == 20
    assert len(report["fanfold_steps_per_second"]) == len(report["dbos_steps_per_second"]) == 2
    assert all(rate > 0 for rate in report["dbos_steps_per_second"])
    assert report["ratios"] == [
        round(ours / theirs, 3)
        for ours, theirs in zip(
            report["fanfold_steps_per_second"], report["dbos_steps_per_second"], strict=True
        )
    ]
    assert report["within_target"] == (report["median_ratio"] >= report["target_ratio"] == 4.0)
    with connection.cursor() as cursor:  # DBOS's system database went with the bench
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE '%%_dbos'")
        assert cursor.fetchall() == []


def test_bench_seq_long_steps_alternates_short_and_long_runs(counters_redis: Any) -> None:
    report = bench("seq", "--steps", "10", "--long-steps", "30", "--pairs", "2")

    assert report["scenario"] == "seq long vs short"
    assert (report["steps"], report["long_steps"]) == (10, 30)
    assert {side: len(rates) for side, rates in report["steps_per_second"].items()} == {
        "short": 2,
        "long": 2,
    }
    medians = report["median_steps_per_second"]
    assert report["ratio_long_to_short"] == round(medians["long"] / medians["short"], 3)
    steps = sorted(Run.objects.filter(status="completed").values_list("result", flat=True))
    assert steps == [10] * 3 + [30] * 2  # the warm-up's ten steps, then the pairs


def test_bench_seq_takes_one_mode_at_a_time() -> None:
    error = refused("seq", "--versions", "--vs-dbos")
    assert "--versions and --vs-dbos are separate benchmarks: one at a time" in error
    assert "--long-steps must be at least 1" in refused("seq", "--long-steps", "0")


def test_bench_refuses_to_run_beside_workers_already_on_its_broker() -> None:
    with running_worker("bystander", "threads", 1):
        error = refused("seq", "--steps", "5")

    assert "1 Celery worker(s) already answer on this broker (bystander@" in error
    assert not Run.objects.exists()  # refused before it started anything
