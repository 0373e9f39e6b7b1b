"""Stream chunks in the real store: dense seqs, replay-safe workflow writes, reading back."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from streams_flows import TRIES, start

from runtime import get_run, stream
from runtime.core.clock import FakeClock
from runtime.core.current import StepInfo, StepOutbox, running
from runtime.core.errors import FanfoldError, PayloadError
from runtime.core.writes import ChunkDraft
from runtime.executor import ExecutionOutcome, execute
from runtime.models import Run, StreamChunk
from runtime.store.messaging.streams import append_chunk, append_chunks_txn

pytestmark = pytest.mark.usefixtures("db_ready")


def values(run_id: uuid.UUID, name: str = "default") -> list[Any]:
    chunks = StreamChunk.objects.filter(run_id=run_id, stream=name).order_by("seq")
    return list(chunks.values_list("value", flat=True))


def test_stream_store_workflow_writes_are_not_repeated_by_replays(clock: FakeClock) -> None:
    run_id = start("tests.streams_local.story")
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    assert values(run_id) == ["once", "UPON"]
    clock.advance(10)
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert values(run_id) == ["once", "UPON", "a time"]
    assert values(run_id, "other") == [{"n": 1}]
    seqs = StreamChunk.objects.filter(run_id=run_id, stream="default").values_list("seq", flat=True)
    assert sorted(seqs) == [1, 2, 3]
    handle = get_run(run_id)
    assert list(handle.read_stream()) == ["once", "UPON", "a time"]
    assert list(handle.read_stream(after=2)) == ["a time"]
    assert list(handle.read_stream("nothing-here")) == []


def test_stream_store_concurrent_writers_get_dense_seqs_in_their_order(clock: FakeClock) -> None:
    run_id = start("tests.streams_local.sleeper")
    errors: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            with running(StepInfo(run_id, writer, f"writer-{writer}", 1)):
                for i in range(40):
                    stream("shared").write([writer, i])
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    chunks = list(StreamChunk.objects.filter(run_id=run_id, stream="shared").order_by("seq"))
    assert [c.seq for c in chunks] == list(range(1, 241))
    for writer in range(6):
        assert [c.value[1] for c in chunks if c.value[0] == writer] == list(range(40))


def test_stream_store_writer_key_is_written_once() -> None:
    run_id = start("tests.streams_local.sleeper")
    assert append_chunk(run_id, "s", "a", writer_key="1:1") == 1
    assert append_chunk(run_id, "s", "a again", writer_key="1:1") is None
    assert append_chunk(run_id, "s", "b") == 2
    assert values(run_id, "s") == ["a", "b"]


def test_stream_store_write_outside_a_run_or_with_bad_values_is_refused() -> None:
    with pytest.raises(FanfoldError, match="only from a step or a workflow"):
        stream().write("nowhere")
    run_id = start("tests.streams_local.sleeper")
    with running(StepInfo(run_id, 1, "s", 1)):
        with pytest.raises(PayloadError):
            stream().write({1, 2})
        with pytest.raises(ValueError, match="stream name"):
            stream("")
    assert values(run_id) == []


def test_stream_store_read_stream_times_out_while_the_run_goes_on(clock: FakeClock) -> None:
    run_id = start("tests.streams_local.sleeper")
    execute(run_id, clock=clock)
    reader = get_run(run_id).read_stream(timeout=0.3)
    assert next(reader) == "zzz"
    with pytest.raises(TimeoutError):
        next(reader)


def test_stream_store_chunks_go_with_their_run(clock: FakeClock) -> None:
    run_id = start("tests.streams_local.story")
    execute(run_id, clock=clock)
    assert StreamChunk.objects.filter(run_id=run_id).exists()
    Run.objects.filter(id=run_id).delete()
    assert not StreamChunk.objects.filter(run_id=run_id).exists()


def test_stream_store_read_stream_refuses_bad_arguments(clock: FakeClock) -> None:
    handle = get_run(start("tests.streams_local.sleeper"))
    with pytest.raises(ValueError, match="after"):
        list(handle.read_stream(after=-1))
    with pytest.raises(ValueError, match="stream name"):
        list(handle.read_stream(""))


def test_stream_store_reader_pages_through_a_long_stream_of_a_finished_run() -> None:
    run_id = start("tests.streams_local.sleeper")
    for i in range(1203):  # more than two pages of the reader
        append_chunk(run_id, "long", i)
    Run.objects.filter(id=run_id).update(status="completed")
    assert list(get_run(run_id).read_stream("long", timeout=30)) == list(range(1203))
    assert list(get_run(run_id).read_stream("long", after=1000, timeout=30)) == list(
        range(1000, 1203)
    )


def test_stream_store_chunks_with_a_step_commit_with_its_result_only(clock: FakeClock) -> None:

    TRIES.clear()
    run_id = start("tests.streams_local.with_step")
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.SUSPENDED
    # The failed attempt's immediate write stays; what it queued with the step does not.
    assert values(run_id) == ["news starts"]
    assert values(run_id, "log") == []
    clock.advance(60)
    assert execute(run_id, clock=clock).outcome is ExecutionOutcome.COMPLETED
    assert values(run_id) == ["news starts", "news starts", "news done"]
    assert values(run_id, "log") == [{"try": 2}]
    seqs = StreamChunk.objects.filter(run_id=run_id, stream="default").values_list("seq", flat=True)
    assert sorted(seqs) == [1, 2, 3]


def test_stream_store_write_with_step_queues_only_inside_an_inline_step() -> None:
    run_id = start("tests.streams_local.sleeper")
    assert stream().write_with_step("nowhere") is False
    with running(StepInfo(run_id, 1, "branch", 1)):  # a fan-out branch: no outbox
        assert stream().write_with_step("branch") is False
    outbox = StepOutbox()
    with running(StepInfo(run_id, 2, "inline", 1, outbox)):
        with pytest.raises(PayloadError):
            stream().write_with_step({1, 2})
        assert stream("s").write_with_step({"n": 1}) is True
    assert outbox.chunks == [ChunkDraft("s", {"n": 1})] and outbox.size == len('{"n":1}')
    assert values(run_id, "s") == []  # nothing is written before the step's checkpoint


def test_stream_store_chunks_appended_in_a_transaction_follow_the_others() -> None:
    run_id = start("tests.streams_local.sleeper")
    append_chunk(run_id, "s", "first")
    drafts = [ChunkDraft("t", 1), ChunkDraft("s", "second"), ChunkDraft("s", "third")]
    with transaction.atomic():
        append_chunks_txn(run_id, drafts, timezone.now())
    assert values(run_id, "s") == ["first", "second", "third"]
    assert values(run_id, "t") == [1]
    seqs = StreamChunk.objects.filter(run_id=run_id, stream="s").values_list("seq", flat=True)
    assert sorted(seqs) == [1, 2, 3]
