"""The mcp extra stays optional: loading the project, its API, its admin and the `fanfold`
command imports no MCP SDK (api.mcp.server imports it when the server is served)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.unit.architecture.source_graph import ROOT

PROBE = """
import sys, django
django.setup()
import api.urls, api.mcp.http, api.mcp.tools, runtime.admin
import runtime.management.commands.fanfold
print("mcp" in sys.modules)
"""


def test_architecture_the_core_never_imports_the_mcp_sdk() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": "sqlite:///:memory:",
    }
    probe = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "False"
