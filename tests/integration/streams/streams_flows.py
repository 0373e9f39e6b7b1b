"""Workflows of the stream integration tests (names prefixed "tests.streams_local.")."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from runtime import step, stream, workflow
from runtime.services import start_run

T0 = datetime(2030, 1, 1, tzinfo=UTC)


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
