"""Workflows of the flow-control integration tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import Cron, step, workflow

calls: list[str] = []  # labels of `note` bodies, in order


@step(name="tests.flow.note")
def note(label: str) -> str:
    calls.append(label)
    return label


@workflow(name="tests.flow.limited", concurrency=2)
def limited(ctx: Any, label: str) -> str:
    return ctx.step(note, label)


@step(name="tests.flow.paced", rate_limit="2/s")
def paced(i: int) -> int:
    return i


@workflow(name="tests.flow.paced_twice")
def paced_twice(ctx: Any) -> list[int]:
    return [ctx.step(paced, 1), ctx.step(paced, 2)]


@workflow(name="tests.flow.every_minute", schedule=Cron("* * * * *"), catchup="latest")
def every_minute(ctx: Any) -> None:
    return None


@workflow(name="tests.flow.every_ten_seconds", schedule=timedelta(seconds=10), catchup="all")
def every_ten_seconds(ctx: Any) -> None:
    return None


@workflow(name="tests.flow.paced_map")
def paced_map(ctx: Any, items: list[int]) -> list[int]:
    return ctx.map(paced, items)


@workflow(name="tests.flow.plain")
def plain(ctx: Any, label: str) -> str:
    return ctx.step(note, label)


@step(name="tests.flow.brisk", rate_limit="10/s")
def brisk(i: int) -> int:
    return i


@workflow(name="tests.flow.plain_map")
def plain_map(ctx: Any, labels: list[str]) -> list[str]:
    return ctx.map(note, labels)
