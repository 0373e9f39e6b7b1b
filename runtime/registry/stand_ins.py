"""The code a run of a workflow calls: its own, unless a test environment stands in for it
(runtime.testing's `mock_workflow`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

WorkflowSubstitute = Callable[[str, Callable[..., Any]], Callable[..., Any]]
_substitute: WorkflowSubstitute | None = None


def install_workflow_substitute(substitute: WorkflowSubstitute | None) -> WorkflowSubstitute | None:
    """Make `substitute(name, fn)` choose the function every run of a workflow calls;
    returns the one it replaces."""
    global _substitute
    previous, _substitute = _substitute, substitute
    return previous


def workflow_code(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """What a run of workflow `name` (whose function is `fn`) calls."""
    return fn if _substitute is None else _substitute(name, fn)
