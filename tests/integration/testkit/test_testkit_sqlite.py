"""The test kit's tests again on SQLite: the same files, in a pytest process of their own on a
SQLite database (the suite's own process is on PostgreSQL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


@pytest.mark.skipif(os.environ.get("TESTKIT_INNER_RUN") == "1", reason="the inner run")
def test_testkit_tests_pass_on_sqlite(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'testkit.sqlite3'}",
        "TESTKIT_INNER_RUN": "1",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    files = sorted(str(p) for p in HERE.glob("test_testkit_*.py") if p.name != Path(__file__).name)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", *files],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    # Only the plugin's subprocess test is skipped inside (it runs from the outer session).
    assert " passed" in summary and "failed" not in summary and "error" not in summary
    assert "skipped" not in summary or "1 skipped" in summary
