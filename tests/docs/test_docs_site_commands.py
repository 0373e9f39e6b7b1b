"""The pages a site owner follows name their own project in commands, not the demo's `config`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.workers import ROOT

# Pages written for someone adding Fanfold to their own Django project. The operating pages
# (deploying, observability, ...) run the demo project and say so.
SITE_PAGES = [
    "add-to-your-project.md",
    "django-tasks.md",
    "agents.md",
    "settings.md",
    "flow-control.md",
]
DEMO_APP = re.compile(r"celery\s+-A\s+config\b|\bconfig\.(?:settings|celery|wsgi)\b")


@pytest.mark.parametrize("name", SITE_PAGES)
def test_docs_site_commands_name_the_users_project(name: str) -> None:
    page: Path = ROOT / "docs" / name
    assert DEMO_APP.findall(page.read_text()) == []
