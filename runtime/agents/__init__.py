"""Durable agents on Fanfold (the `fanfold[agents]` extra, contract section 2g).

`FanfoldDurability` and `FanfoldApprovals` need pydantic-ai and are imported on first use,
so the core never imports it. `runtime.agents.approvals` (no agent library) is what both
integrations use to ask people and wait.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FanfoldApprovals", "FanfoldDurability"]


def __getattr__(name: str) -> Any:
    if name == "FanfoldDurability":
        from runtime.agents.durability import FanfoldDurability

        return FanfoldDurability
    if name == "FanfoldApprovals":
        from runtime.agents.deferred import FanfoldApprovals

        return FanfoldApprovals
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
