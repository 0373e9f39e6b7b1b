"""The one-statement PostgreSQL sink path: same rows as the portable path, guards, big batches."""

from __future__ import annotations

from contextlib import closing
from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
from django.utils import timezone
from run_records import events, run_row

from runtime import store
from runtime.checkpoint.batching import Checkpoint
from runtime.checkpoint.errors import CheckpointFailed
from runtime.core.errors import LeaseLost
from runtime.core.identity import step_id
from runtime.core.writes import (
    ChunkDraft,
    EventDraft,
    HistoryWrite,
    LeaseGuard,
    RunPatch,
    StepRow,
)
from runtime.models import Run, Step, StreamChunk
from runtime.services import start_run
from runtime.store.history import pg_json_rows, pg_statements
from runtime.store.history.parts import STEP_UPDATE_FIELDS, run_parts
from runtime.store.history.sink import DatabaseSink
from runtime.store.messaging.streams import append_chunk
from runtime.store.runs import run_statements as runs


def record_calls(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str
) -> list[tuple[tuple[Any, ...], Any]]:
    """Let `owner.name` run as before, recording each call's arguments and return value."""
    calls: list[tuple[tuple[Any, ...], Any]] = []
    real = getattr(owner, name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        returned = real(*args, **kwargs)
        calls.append((args, returned))
        return returned

    monkeypatch.setattr(owner, name, recorded)
    return calls


def many_steps(run: Run, count: int, at: datetime) -> HistoryWrite:
    rows, drafts = [], []
    for position in range(1, count + 1):
        sid = step_id(run.id, position)
        rows.append(
            StepRow(
                sid,
                position,
                "bulk",
                "step",
                "completed",
                1,
                at,
                input={"i": position},
                result=position,
                started_at=at,
                finished_at=at,
            )
        )
        drafts.append(EventDraft("step_completed", at, sid, {"result": position}))
    return HistoryWrite(run.id, LeaseGuard("mine"), tuple(drafts), tuple(rows))


@pytest.mark.parametrize("patched", [False, True], ids=["plain", "patched"])
def test_pg_statements_big_parts_go_as_json_or_take_the_portable_path(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch, patched: bool
) -> None:
    calls = record_calls(monkeypatch, pg_statements, "write_parts")
    count = 5000  # 5000 step rows x 15 columns is more than 65,535 parameters
    at = timezone.now()
    write = many_steps(leased_run, count, at)
    if patched:  # not plain: as parameters it is too big for one statement
        write = replace(write, run=RunPatch(started_at=at))

    store.writer().write(Checkpoint(session="bulk", payload=write, sync=True))

    # A plain part goes as one JSON statement; a patched one through the portable path.
    assert [returned is not None for _, returned in calls] == [not patched]
    assert Step.objects.filter(run_id=leased_run.id).count() == count
    seqs = [e.seq for e in events(leased_run.id)]
    assert seqs == list(range(1, count + 2))  # run_created, then one event per step
    assert run_row(leased_run.id).last_seq == count + 1


def test_pg_statements_failed_guard_rolls_back_and_names_the_loss(leased_run: Run) -> None:
    Run.objects.filter(id=leased_run.id).update(lease_token="someone-else")

    with pytest.raises(CheckpointFailed) as info:
        store.writer().write(
            Checkpoint(session="lost", payload=many_steps(leased_run, 3, timezone.now()), sync=True)
        )

    assert isinstance(info.value.__cause__, LeaseLost)
    assert Step.objects.filter(run_id=leased_run.id).count() == 0
    assert [e.type for e in events(leased_run.id)] == ["run_created"]
    store.writer().reset_session("lost")


def test_store_run_parts_never_merge_two_sessions() -> None:
    import uuid

    from runtime.core.writes import OpenStepGuard

    run_id, step = uuid.uuid4(), uuid.uuid4()
    write = HistoryWrite(run_id, OpenStepGuard(step))
    groups = run_parts([("post-1", write), ("post-2", write), ("post-1", write)])
    assert len(groups) == 2  # each post keeps its own guard check


def test_pg_statements_one_statement_writes_what_the_portable_path_writes(leased_run: Run) -> None:
    at = timezone.now()
    (group,) = run_parts([("s", many_steps(leased_run, 3, at))])
    sql, params = pg_statements.group_statement(group, at, STEP_UPDATE_FIELDS)
    assert sql.count("INSERT INTO") == 2 and len(params) < pg_statements.MAX_PARAMETERS

    store.writer().write(
        Checkpoint(session="small", payload=many_steps(leased_run, 3, at), sync=True)
    )

    rows = Step.objects.filter(run_id=leased_run.id).order_by("position")
    assert [(r.position, r.status, r.result, r.input) for r in rows] == [
        (1, "completed", 1, {"i": 1}),
        (2, "completed", 2, {"i": 2}),
        (3, "completed", 3, {"i": 3}),
    ]
    assert [(e.seq, e.type, e.payload) for e in events(leased_run.id)][1:] == [
        (2, "step_completed", {"result": 1}),
        (3, "step_completed", {"result": 2}),
        (4, "step_completed", {"result": 3}),
    ]


@pytest.fixture
def two_leased_runs(leased_run: Run) -> tuple[Run, Run]:
    other, _ = start_run("examples.noop_loop", [2])
    Run.objects.filter(id=other.id).update(lease_token="mine", lease_expires_at=timezone.now())
    return leased_run, other


def test_pg_json_rows_several_runs_share_one_statement(
    two_leased_runs: tuple[Run, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = record_calls(monkeypatch, pg_json_rows, "runs_statement")
    first, second = two_leased_runs
    at = timezone.now()

    with closing(DatabaseSink()) as sink:
        sink.write_batch(
            [
                Checkpoint(session="a", payload=many_steps(first, 2, at), sync=True),
                Checkpoint(session="b", payload=many_steps(second, 3, at), sync=True),
            ]
        )

    assert [len(args[0]) for args, _ in calls] == [2]
    for run, count in ((first, 2), (second, 3)):
        rows = Step.objects.filter(run_id=run.id).order_by("position")
        assert [(r.position, r.status, r.result, r.input, r.error) for r in rows] == [
            (p, "completed", p, {"i": p}, None) for p in range(1, count + 1)
        ]
        assert [(e.seq, e.type, e.payload) for e in events(run.id)][1:] == [
            (p + 1, "step_completed", {"result": p}) for p in range(1, count + 1)
        ]
        assert run_row(run.id).last_seq == count + 1


def test_pg_json_rows_a_lost_lease_fails_only_its_own_run(two_leased_runs: tuple[Run, Run]) -> None:
    first, second = two_leased_runs
    Run.objects.filter(id=first.id).update(lease_token="someone-else")
    at = timezone.now()
    batch = [
        Checkpoint(session="a", payload=many_steps(first, 2, at), sync=True),
        Checkpoint(session="b", payload=many_steps(second, 2, at), sync=True),
    ]

    with closing(DatabaseSink()) as sink:
        with pytest.raises(LeaseLost):
            sink.write_batch(batch)  # the combined statement fails; the portable path names why
        assert Step.objects.filter(run_id__in=[first.id, second.id]).count() == 0

        sink.write_batch(batch[1:])  # the writer then retries each session alone
    assert Step.objects.filter(run_id=second.id).count() == 2
    assert [e.type for e in events(first.id)] == ["run_created"]


RESULTS: list[Any] = [
    None,
    0,
    -7,
    2**70,  # beyond 64 bits: JSON numbers are not bounded
    1.5,
    "",
    "null",  # a string that spells a JSON literal stays a string
    'a "quoted", {braced} [list], comma',
    "héllo ✓ \u2028",
    True,
    [],
    {},
    [1, [2, [3, None]], {"k": "v"}],
    {"nested": {"list": [1.25, False, None], "text": "x"}},
]


def test_store_load_history_on_postgresql_reads_what_the_portable_path_reads(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = timezone.now()
    rows = []
    for position, result in enumerate(RESULTS, start=1):
        failed = position % 4 == 0
        rows.append(
            StepRow(
                step_id(leased_run.id, position), position, f"step-{position}", "step",
                "failed" if failed else "completed", position, at,
                input={"i": position}, result=None if failed else result,
                error={"type": "Boom", "message": f"no {position}"} if failed else None,
                started_at=at, wake_at=at if position % 3 == 0 else None,
                callback_token=f"token-{position}" if position % 5 == 0 else None,
            )
        )  # fmt: skip
    write = HistoryWrite(leased_run.id, LeaseGuard("mine"), (), tuple(rows))
    store.writer().write(Checkpoint(session="history", payload=write, sync=True))

    on_postgresql = runs.load_history(leased_run.id)
    monkeypatch.setattr(runs, "postgres", lambda: False)
    portable = runs.load_history(leased_run.id)

    assert on_postgresql == portable
    assert [on_postgresql[p].result for p in range(1, len(RESULTS) + 1)] == [
        None if p % 4 == 0 else result for p, result in enumerate(RESULTS, start=1)
    ]
    assert on_postgresql[4].error == {"type": "Boom", "message": "no 4"}
    assert on_postgresql[5].callback_token == "token-5" and on_postgresql[3].wake_at == at


def test_store_load_history_of_a_run_without_steps_is_empty(leased_run: Run) -> None:
    assert runs.load_history(leased_run.id) == {}


@pytest.mark.parametrize("path", ["one round trip", "portable"])
def test_store_stream_chunks_commit_in_the_checkpoint_on_either_path(
    leased_run: Run, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path == "portable":
        monkeypatch.setattr(pg_statements, "write_parts", lambda *args: None)
    append_chunk(leased_run.id, "agent", "before")
    chunks = (ChunkDraft("agent", {"n": 1}), ChunkDraft("other", 2), ChunkDraft("agent", [3]))
    write = replace(many_steps(leased_run, 1, timezone.now()), chunks=chunks)

    store.writer().write(Checkpoint(session="chunks", payload=write, sync=True))

    rows = StreamChunk.objects.filter(run_id=leased_run.id).order_by("stream", "seq")
    assert [(c.stream, c.seq, c.value) for c in rows] == [
        ("agent", 1, "before"),
        ("agent", 2, {"n": 1}),
        ("agent", 3, [3]),
        ("other", 1, 2),
    ]
    assert Step.objects.filter(run_id=leased_run.id).count() == 1


def test_store_stream_chunks_of_a_failed_guard_are_not_written(leased_run: Run) -> None:
    Run.objects.filter(id=leased_run.id).update(lease_token="someone-else")
    write = replace(many_steps(leased_run, 1, timezone.now()), chunks=(ChunkDraft("agent", 1),))

    with pytest.raises(CheckpointFailed):
        store.writer().write(Checkpoint(session="lost-chunks", payload=write, sync=True))

    assert not StreamChunk.objects.filter(run_id=leased_run.id).exists()
    store.writer().reset_session("lost-chunks")
