"""Offline models for testing agent workflows: no provider, no network, no key.

- `ScriptedModel(replies)`: a pydantic-ai model (needs the `agents` extra's pydantic-ai).
- `ScriptedAgentsModel(replies)`: an OpenAI Agents SDK `Model` (needs its openai-agents).
- `Text`, `ToolCall`: the replies of a script (runtime.testing.agents.replies).

Each library is imported only when its model is first asked for, so this package imports with
the extra absent.
"""

from __future__ import annotations

from typing import Any

from runtime.testing.agents.replies import Reply, ScriptExhausted, Text, ToolCall

__all__ = ["Reply", "ScriptExhausted", "ScriptedAgentsModel", "ScriptedModel", "Text", "ToolCall"]


def __getattr__(name: str) -> Any:
    if name == "ScriptedModel":
        from runtime.testing.agents.pydantic_ai import ScriptedModel

        return ScriptedModel
    if name == "ScriptedAgentsModel":
        from runtime.testing.agents.openai_agents import ScriptedAgentsModel

        return ScriptedAgentsModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
