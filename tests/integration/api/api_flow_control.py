"""Workflows with flow control that the API tests list, start and pause ("tests.api.")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runtime import Cron, workflow


@workflow(name="tests.api.nightly", schedule=Cron("0 3 * * *", tz="Europe/Paris"))
def nightly(ctx: Any) -> None:
    """Runs at 03:00 Paris time."""


@workflow(name="tests.api.hourly", schedule=timedelta(hours=1), catchup="all")
def hourly(ctx: Any) -> None:
    """Runs every hour."""


@workflow(name="tests.api.limited", concurrency=2)
def limited(ctx: Any, customer: str) -> str:
    return customer
