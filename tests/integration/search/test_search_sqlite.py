"""The search tests again on SQLite: the same filters and operators, the same attributes
(the suite's database is PostgreSQL; these files run in a process of their own on SQLite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
FILES = ["test_search_filters.py", "test_search_attributes.py", "test_search_cli.py"]


def test_search_filters_and_attributes_on_sqlite(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'search.sqlite3'}"}
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
               *[str(HERE / f) for f in FILES]]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout
