"""`WorkflowTestCase` (Django's runner) and the pytest plugin's `fanfold_env` fixture, with
pytest-django's `db` and `transactional_db`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from testkit_flows import checkout, sleeper

from runtime.testing import WorkflowTestCase

ROOT = Path(__file__).parents[3]

USER_TESTS = """
from datetime import timedelta

from runtime import workflow


@workflow(name="plugin.nap")
def nap(ctx, days):
    ctx.sleep(timedelta(days=days))
    return ctx.now().isoformat()


def test_with_db(db, fanfold_env):
    began = fanfold_env.now()
    assert fanfold_env.run(nap, 3) == (began + timedelta(days=3)).isoformat()


def test_with_transactional_db(transactional_db, fanfold_env):
    run = fanfold_env.start(nap, 1)
    assert fanfold_env.run_until_blocked(run).kind == "sleep"
    fanfold_env.skip(timedelta(days=1))
    assert run.status == "completed"


def test_alone(fanfold_env):
    assert fanfold_env.run(nap, 0) == fanfold_env.now().isoformat()
"""


class CheckoutTests(WorkflowTestCase):
    def test_checkout_under_djangos_runner(self) -> None:
        self.env.mock_step("testkit.charge", returns={"id": "ch_9"})
        run = self.env.start(checkout, "7")
        self.env.skip(timedelta(days=2))
        self.env.post_callback(run, "approval", result="yes")
        self.assertEqual(run.wait(), {"charge": {"id": "ch_9"}, "decision": "yes"})

    def test_each_test_gets_a_fresh_clock(self) -> None:
        began = self.env.now()
        self.env.run(sleeper, 60.0)
        self.assertEqual(self.env.now() - began, timedelta(minutes=1))
        self.assertEqual(self.env.calls("testkit.charge"), [])


def _own_database() -> str:
    """This session's database URL with a name of its own (its test database too): the
    inner pytest creates and drops one beside this session's."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        return url
    base, _, name = url.rpartition("/")
    return f"{base}/{name}_plugin"


@pytest.mark.skipif(os.environ.get("TESTKIT_INNER_RUN") == "1", reason="the inner run")
def test_testkit_plugin_fixture_with_db_and_transactional_db(tmp_path: Path) -> None:
    (tmp_path / "test_user_flows.py").write_text(textwrap.dedent(USER_TESTS))
    registered = any(e.value == "runtime.pytest_plugin" for e in entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", "runtime.pytest_plugin"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", *plugin,
         "-q", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
         str(tmp_path / "test_user_flows.py")],
        cwd=ROOT, env={**os.environ, "TESTKIT_INNER_RUN": "1", "DATABASE_URL": _own_database()},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
