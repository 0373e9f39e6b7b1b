"""Workflows of the data lifecycle tests (names prefixed "tests.lifecycle.")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import step, stream, workflow

SECRET = "sekrit-7f3a"


@step(name="tests.lifecycle.reveal")
def reveal(word: str) -> dict[str, Any]:
    stream().write({"chunk": f"{word}-{SECRET}-chunk"})
    return {"word": word, "secret": f"{SECRET}-result"}


@step(name="tests.lifecycle.echo")
def echo(value: Any) -> Any:
    return value


@workflow(name="tests.lifecycle.tell")
def tell(ctx: Any, word: str) -> dict[str, Any]:
    first = ctx.step(reveal, word)
    second = ctx.step(echo, [first["secret"], word])
    return {"first": first, "second": second}


@workflow(name="tests.lifecycle.big")
def big(ctx: Any, blob: str) -> int:
    return len(ctx.step(echo, blob[:100]))


@workflow(name="tests.lifecycle.kept_a_day", retention=timedelta(days=1))
def kept_a_day(ctx: Any) -> str:
    return "done"


@workflow(name="tests.lifecycle.kept_a_year", retention="365d")
def kept_a_year(ctx: Any) -> str:
    return "done"
