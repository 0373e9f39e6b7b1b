"""Workflows of the stream integration tests (names prefixed "tests.streams_local.")."""

from __future__ import annotations

import uuid
from typing import Any

from runtime import RetryPolicy, step, stream, workflow
from runtime.services import start_run
from tests.support.driven_by_hand import T0 as T0  # the tests' clock starts here


@step(name="tests.streams_local.shout")
def shout(word: str) -> str:
    stream().write(word.upper())
    return word


@workflow(name="tests.streams_local.story")
def story(ctx: Any) -> str:
    stream().write("once")  # from workflow code: written once, whatever the replays
    ctx.step(shout, "upon")
    ctx.sleep(10)
    stream().write("a time")
    stream("other").write({"n": 1})
    return "told"


@workflow(name="tests.streams_local.sleeper")
def sleeper(ctx: Any) -> None:
    stream().write("zzz")
    ctx.sleep(3600)


def start(name: str, *args: Any) -> uuid.UUID:
    run, _ = start_run(name, list(args))
    return run.id


TRIES: list[int] = []


@step(name="tests.streams_local.report", retry=RetryPolicy(max_attempts=2, initial_delay=1))
def report(word: str) -> str:
    TRIES.append(1)
    stream().write(f"{word} starts")  # at once, in a transaction of its own
    stream("log").write_with_step({"try": len(TRIES)})
    stream().write_with_step(f"{word} done")
    if len(TRIES) == 1:
        raise RuntimeError("the first attempt fails after queueing its chunks")
    return word


@workflow(name="tests.streams_local.with_step")
def with_step(ctx: Any) -> str:
    return ctx.step(report, "news")
