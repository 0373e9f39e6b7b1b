"""`@workflow`, `@step`, signatures and the registry that finds them by name.

`functions` holds what the decorators make (StepFunction, WorkflowFunction and its
FlowOptions) and the signatures that fan them out; `table` the Registry of workflows and steps
by name and `registry`, this process's one; `decorators` the `@step` and `@workflow`
decorators. Import the names from here: `from runtime.registry import registry, step`.
"""

from __future__ import annotations

from runtime.registry.decorators import step, workflow
from runtime.registry.functions import (
    ON_LIMIT_POLICIES,
    FlowOptions,
    OnLimit,
    Signature,
    SignatureMap,
    StepFunction,
    WorkflowFunction,
    default_name,
    step_policy,
)
from runtime.registry.table import Registry, registry

__all__ = [
    "ON_LIMIT_POLICIES",
    "FlowOptions",
    "OnLimit",
    "Registry",
    "Signature",
    "SignatureMap",
    "StepFunction",
    "WorkflowFunction",
    "default_name",
    "registry",
    "step",
    "step_policy",
    "workflow",
]
