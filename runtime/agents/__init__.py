"""Durable agents on Fanfold (the `fanfold[agents]` extra, contract section 2g).

The public names are imported on first use, so importing this package imports neither agent
library (nor Django's models): `FanfoldDurability` and `FanfoldApprovals` need pydantic-ai,
`FanfoldRunner` the OpenAI Agents SDK; `decide`, `resolve`, `wait_for_approvals` and
`agent_events` need neither. (The list of a run's approvals is
`runtime.agents.approvals.approvals`: the package cannot export a name its submodule has.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the type checker sees; at run time __getattr__ imports on first use
    from runtime.agents.approvals import decide, resolve, wait_for_approvals
    from runtime.agents.deferred import FanfoldApprovals
    from runtime.agents.durability import FanfoldDurability
    from runtime.agents.live import agent_events
    from runtime.agents.openai_runner import FanfoldRunner

__all__ = [
    "FanfoldApprovals",
    "FanfoldDurability",
    "FanfoldRunner",
    "agent_events",
    "decide",
    "resolve",
    "wait_for_approvals",
]

_APPROVALS = frozenset({"decide", "resolve", "wait_for_approvals"})


def __getattr__(name: str) -> Any:
    if name == "FanfoldDurability":
        from runtime.agents import durability

        return durability.FanfoldDurability
    if name == "FanfoldApprovals":
        from runtime.agents import deferred

        return deferred.FanfoldApprovals
    if name == "FanfoldRunner":
        from runtime.agents import openai_runner

        return openai_runner.FanfoldRunner
    if name in _APPROVALS:
        from runtime.agents import approvals as approvals_module

        return getattr(approvals_module, name)
    if name == "agent_events":
        from runtime.agents import live

        return live.agent_events
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
