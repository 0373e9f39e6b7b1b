"""The claim of a batch's runs on real PostgreSQL: one UPDATE for all of them in one round trip,
each under its own token, the runs a single claim would refuse skipped, the leases of the
runs a batch does not execute given back (directly and behind a pooler: nothing prepared)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from runtime import executor
from runtime.core.identity import DEBOUNCE_KEY_PREFIX
from runtime.leases.keepers import run_leases
from runtime.models import Run, RunStatus
from runtime.store.connection import raw_connection
from runtime.store.runs.run_claims import claim_runs_with_history
from runtime.store.runs.run_statements import claim_run, load_history
from runtime.worker import run_batch
from runtime.worker.run_batch import execute_batch
from tests.support import sample_tasks as tasks
from tests.support.dispatch import Enqueued
from tests.support.statements import sql_text


@pytest.fixture(params=[False, True], ids=["direct", "pooled"])
def pooled(request: pytest.FixtureRequest, fanfold_settings: Callable[..., Any]) -> Iterator[bool]:
    connection.close()  # the raw connection's preparing is set as it opens
    fanfold_settings(DATABASE_POOLED=request.param)
    yield request.param
    connection.close()


@contextmanager
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """The statements executed on psycopg cursors, and the pipelines entered, in the block."""
    record: dict[str, list[str]] = {"statements": [], "pipelines": []}
    execute, pipeline = psycopg.Cursor.execute, psycopg.Connection.pipeline

    def recording_execute(self: psycopg.Cursor[Any], query: Any, *args: Any, **kw: Any) -> Any:
        record["statements"].append(sql_text(query))
        return execute(self, query, *args, **kw)

    def recording_pipeline(self: psycopg.Connection[Any]) -> Any:
        record["pipelines"].append("pipeline")
        return pipeline(self)

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Cursor, "execute", recording_execute)
        patch.setattr(psycopg.Connection, "pipeline", recording_pipeline)
        yield record


def new_runs(count: int) -> list[uuid.UUID]:
    return [uuid.UUID(tasks.add.enqueue(i, 1).id) for i in range(count)]


def test_batch_claims_every_run_in_one_statement(
    enqueued: Enqueued, pooled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_ids = new_runs(5)
    claims = [(run_id, secrets.token_hex(16)) for run_id in run_ids]
    with sent(monkeypatch) as record:
        found = claim_runs_with_history(claims, timezone.now(), owner=42)
    updates = [s for s in record["statements"] if s.lstrip().startswith("UPDATE")]
    assert len(updates) == 1 and len(record["pipelines"]) == 1  # one statement, one round trip
    assert list(found) == sorted(run_ids)
    assert all(
        claim.status == RunStatus.PENDING and history == {} for claim, history in found.values()
    )
    rows = dict(Run.objects.filter(id__in=run_ids).values_list("id", "lease_token"))
    assert rows == dict(claims)  # each run under its own token
    assert len(set(rows.values())) == 5
    assert set(Run.objects.filter(id__in=run_ids).values_list("lease_owner", flat=True)) == {42}
    prepared = raw_connection().execute(  # the claim's (an enqueue's statement has its own)
        "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'UPDATE %%unnest%%'"
    )
    assert prepared.fetchone() == (0 if pooled else 1,)


def test_batch_claims_skip_what_a_single_claim_skips(enqueued: Enqueued) -> None:
    held, finished, cancelled, debounced, free = new_runs(5)
    now = timezone.now()
    Run.objects.filter(id=held).update(
        lease_token="other", lease_expires_at=now + timedelta(seconds=60)
    )
    Run.objects.filter(id=finished).update(status=RunStatus.COMPLETED)
    Run.objects.filter(id=cancelled).update(status=RunStatus.CANCELLED)
    Run.objects.filter(id=debounced).update(
        idempotency_key=f"{DEBOUNCE_KEY_PREFIX}k", wake_at=now + timedelta(hours=1)
    )
    skipped = [held, finished, cancelled, debounced]
    found = claim_runs_with_history([(r, f"t{n}") for n, r in enumerate([*skipped, free])], now)
    assert list(found) == [free]
    for run_id in skipped:
        assert claim_run(run_id, "single", now) is None
    assert Run.objects.get(id=held).lease_token == "other"


def test_batch_claims_read_each_claimed_run_history(enqueued: Enqueued) -> None:
    first, second = new_runs(2)
    assert executor.execute(first).outcome is executor.ExecutionOutcome.COMPLETED
    Run.objects.filter(id=first).update(status=RunStatus.RUNNING)  # as if it ran again
    found = claim_runs_with_history([(first, "a"), (second, "b")], timezone.now())
    assert found[first][1] == load_history(first) and len(found[first][1]) >= 1
    assert found[second][1] == {}


def test_batch_skips_a_run_held_elsewhere_and_runs_a_repeated_one_once(enqueued: Enqueued) -> None:
    held, free = new_runs(2)
    Run.objects.filter(id=held).update(
        lease_token="other", lease_expires_at=timezone.now() + timedelta(seconds=60)
    )
    assert execute_batch([held, free, free]) == "completed:1,skipped:2"
    assert Run.objects.get(id=free).status == RunStatus.COMPLETED


def test_batch_gives_back_the_leases_of_runs_a_failure_leaves(
    enqueued: Enqueued, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_ids = new_runs(3)
    real = executor.execute_claimed

    def failing_second(run_id: uuid.UUID, *args: Any, **kwargs: Any) -> executor.Execution:
        if run_id == run_ids[1]:
            run_leases.release(args[0])
            raise RuntimeError("the database went away")
        return real(run_id, *args, **kwargs)

    monkeypatch.setattr(executor, "execute_claimed", failing_second)
    with pytest.raises(RuntimeError):
        execute_batch(run_ids)
    tokens = dict(Run.objects.filter(id__in=run_ids).values_list("id", "lease_token"))
    assert tokens[run_ids[2]] is None  # claimable again at once by the message's retry
    assert not run_leases.beat_once()  # nothing of the batch is held here any more


def test_batch_claims_in_an_atomic_block_claim_run_by_run(
    enqueued: Enqueued, monkeypatch: pytest.MonkeyPatch
) -> None:
    held, free = new_runs(2)
    Run.objects.filter(id=held).update(
        lease_token="other", lease_expires_at=timezone.now() + timedelta(seconds=60)
    )
    with sent(monkeypatch) as record, transaction.atomic():
        found = claim_runs_with_history([(held, "a"), (free, "b")], timezone.now())
    assert list(found) == [free] and not record["pipelines"]  # the path SQLite takes
    assert Run.objects.get(id=free).lease_token == "b"


def test_batch_claims_the_runs_left_one_by_one_after_a_third_of_a_lease(
    enqueued: Enqueued, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, taken = new_runs(3)
    moments = iter([0.0, 0.0])  # the claim, the first run's turn; then a lease later
    monkeypatch.setattr(run_batch, "_clock", lambda: next(moments, 1e6))
    real = executor.execute_claimed

    def then_taken_elsewhere(run_id: uuid.UUID, *args: Any, **kwargs: Any) -> Any:
        # Meanwhile the unrenewed lease of `taken` expired and another worker claimed it.
        Run.objects.filter(id=taken).update(
            lease_token="other", lease_expires_at=timezone.now() + timedelta(seconds=60)
        )
        return real(run_id, *args, **kwargs)

    monkeypatch.setattr(executor, "execute_claimed", then_taken_elsewhere)
    assert execute_batch([first, second, taken]) == "completed:2,skipped:1"
    assert Run.objects.get(id=taken).lease_token == "other"  # not given back: not ours
    assert Run.objects.get(id=second).status == RunStatus.COMPLETED
