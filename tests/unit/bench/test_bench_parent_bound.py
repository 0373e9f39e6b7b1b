"""A worker the benchmark (or a test) starts ends when its starter exits, even one killed
outright (bench.parent_bound): real processes, the starter SIGKILLed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.workers import ROOT
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's prctl")

STARTER = """
import os, subprocess, sys, time
bound = subprocess.Popen(
    [sys.executable, "-m", "bench.parent_bound", str(os.getpid()), "/bin/sleep", "60"],
    start_new_session=True,
)
print(bound.pid, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie nobody has reaped yet."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def test_the_bound_program_ends_when_its_starter_is_killed() -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    bound = int(starter.stdout.readline())
    wait_until(lambda: _command_line(bound).startswith(b"/bin/sleep"), 10, message="the exec")
    assert alive(bound)  # exec'd into sleep, bound to the starter

    starter.kill()
    starter.wait(10)
    wait_until(lambda: not alive(bound), 10, message="the bound program to end")


def test_a_starter_already_gone_is_not_outlived() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.parent_bound", "1", "/bin/true"],
        cwd=ROOT,
        timeout=30,
    )
    assert done.returncode == 1  # its parent is not pid 1: the starter named is gone
