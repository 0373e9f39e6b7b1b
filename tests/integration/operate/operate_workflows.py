"""Workflows of the operating tests; `VERSION` switches their code the way a deploy would."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from runtime import FatalError, step, workflow

VERSION = {"code": 1}
FAIL: set[str] = set()
_lock = threading.Lock()
calls: Counter[str] = Counter()


def reset() -> None:
    VERSION["code"] = 1
    FAIL.clear()
    with _lock:
        calls.clear()


@step(name="tests.operate.act")
def act(label: str) -> str:
    with _lock:
        calls[label] += 1
    if label in FAIL:
        raise FatalError(f"{label} refused")
    return label.upper()


@workflow(name="tests.operate.three")
def three(ctx: Any, prefix: str = "") -> list[str]:
    """v1: a, b, c. v2 renames b. v3 swaps b and c. v4 removes c. v5 removes b."""
    code = VERSION["code"]
    if code == 2:
        labels = ["a", "b2", "c"]
    elif code == 3:
        labels = ["a", "c", "b"]
    elif code == 4:
        labels = ["a", "b"]
    elif code == 5:
        labels = ["a", "c"]
    else:
        labels = ["a", "b", "c"]
    return [ctx.step(act, prefix + label, name=label) for label in labels]


@workflow(name="tests.operate.patched")
def patched_flow(ctx: Any) -> list[str]:
    """v1: a, b, sleep, d. v2 replaces b by c behind a patch. v3 drops the patch: c only."""
    out = [ctx.step(act, "a", name="a")]
    if VERSION["code"] >= 3 or (VERSION["code"] == 2 and ctx.patched("use-c")):
        out.append(ctx.step(act, "c", name="c"))
    else:
        out.append(ctx.step(act, "b", name="b"))
    ctx.sleep(0.2)
    out.append(ctx.step(act, "d", name="d"))
    return out


@workflow(name="tests.operate.fanned")
def fanned(ctx: Any, items: list[str]) -> dict[str, Any]:
    """before; a fan-out of `act` over items; after."""
    before = ctx.step(act, "before", name="before")
    mapped = ctx.map(act, items)
    after = ctx.step(act, "after", name="after")
    return {"before": before, "mapped": mapped, "after": after}


@workflow(name="tests.operate.waits")
def waits(ctx: Any) -> str:
    ctx.step(act, "a", name="a")
    cb = ctx.create_callback("approval")
    return str(cb.wait())
