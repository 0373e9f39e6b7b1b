"""The purge's own statements (runtime.store.lifecycle.purge): every model that references runs is
covered, forks lose their source, and nothing of another run is touched."""

from __future__ import annotations

from collections.abc import Callable

import lifecycle_flows  # noqa: F401  (registers the workflows)
import pytest
from django.db import connection, models, transaction
from test_lifecycle_retention import age, finished_run, snapshot

from runtime.executor import Execution
from runtime.forks import fork_run
from runtime.lifecycle.archive import SECTIONS
from runtime.models import Run
from runtime.store.lifecycle import purge


def test_purge_statements_cover_every_model_that_references_runs() -> None:
    statements = purge._statements(connection.ops.quote_name)
    deleted = {label for _, label in statements if label is not None}
    assert deleted == {model._meta.label for model in SECTIONS.values()} | {Run._meta.label}
    (clear,) = [sql for sql, label in statements if label is None]
    assert "forked_from_id" in clear and clear.startswith("UPDATE")
    assert statements[-1][1] == Run._meta.label  # the runs themselves last


def test_purge_refuses_a_reference_it_cannot_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    (steps,) = [r for r in Run._meta.related_objects if r.related_model._meta.model_name == "step"]
    monkeypatch.setattr(steps, "on_delete", models.PROTECT)
    with pytest.raises(TypeError, match="cannot purge through"):
        purge._statements(connection.ops.quote_name)


def test_purge_deletes_a_run_clears_its_forks_and_keeps_the_rest(
    run_now: Callable[..., Execution],
) -> None:
    source = finished_run(run_now, "tests.lifecycle.tell", "source")
    other = finished_run(run_now, "tests.lifecycle.tell", "other")
    fork = fork_run(source, 1)
    kept = snapshot(other)
    age(source, 40)

    pks, counts = purge.delete_unlocked(Run.objects.filter(pk=source), 10)

    assert pks == [source]
    assert counts[Run._meta.label] == 1 and counts["runtime.Event"] > 0
    assert all(not m._default_manager.filter(run_id=source).exists() for m in SECTIONS.values())
    assert Run.objects.get(pk=fork.pk).forked_from_id is None
    assert snapshot(other) == kept


@pytest.fixture
def unknown_wal_compression(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(purge, "_wal_compression", {})  # asked afresh, as in a new process


def _wal_compression_now() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW wal_compression")
        return str(cursor.fetchone()[0])


def test_purge_compresses_its_own_transactions_wal_only(unknown_wal_compression: None) -> None:
    server_default = _wal_compression_now()
    with transaction.atomic():
        method = purge.compress_wal(connection.alias)
        assert method in {"lz4", "on"}  # the suite's role is a superuser
        shown = {"on": {"on", "pglz"}}.get(method, {method})  # "on" is pglz
        assert _wal_compression_now() in shown
    assert _wal_compression_now() == server_default


def test_purge_goes_on_uncompressed_where_the_role_may_not(
    unknown_wal_compression: None,
    monkeypatch: pytest.MonkeyPatch,
    run_now: Callable[..., Execution],
) -> None:
    asked: list[str] = []

    def refused(alias: str, name: str, value: str) -> bool:
        asked.append(value)
        return False

    monkeypatch.setattr(purge, "_set_local", refused)
    run_id = finished_run(run_now, "tests.lifecycle.tell", "plain")
    age(run_id, 40)

    for _ in range(2):
        purge.delete_unlocked(Run.objects.filter(pk=run_id), 10)

    assert asked == ["lz4", "on"]  # asked once, the refusal remembered
    assert not Run.objects.filter(pk=run_id).exists()
