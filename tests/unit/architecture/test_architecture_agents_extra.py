"""The agents extra stays optional: loading the project, its API and its admin imports
neither pydantic-ai nor the OpenAI Agents SDK (runtime.agents imports them on first use)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.unit.architecture.source_graph import ROOT

PROBE = """
import sys, django
django.setup()
import api.urls, runtime.admin, runtime.agents, runtime.agents.approvals
loaded = sorted(m for m in ("pydantic_ai", "agents") if m in sys.modules)
print(",".join(loaded))
"""


def test_architecture_the_core_never_imports_an_agent_library() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": "sqlite:///:memory:",
    }
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == ""
