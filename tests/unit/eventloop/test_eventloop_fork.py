"""WorkerLoop after os.fork: the child starts a loop of its own, the parent's goes on."""

from __future__ import annotations

import asyncio
import json
import os
import threading

import pytest
from conftest import LoopFactory

from runtime.eventloop import WorkerLoop


def _child_uses(loop: WorkerLoop, write_end: int) -> None:
    """In the forked child: use the inherited WorkerLoop, report through the pipe, exit."""
    status = 1
    try:

        async def where() -> tuple[int, str]:
            await asyncio.sleep(0.01)
            return os.getpid(), threading.current_thread().name

        pid, thread = loop.submit(where, key="child", label="where").result(timeout=10)
        report = {"pid_matches": pid == os.getpid(), "thread": thread, "running": loop.running}
        os.write(write_end, json.dumps(report).encode())
        status = 0
    except BaseException as exc:
        os.write(write_end, json.dumps({"error": repr(exc)}).encode())
    finally:
        os._exit(status)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_worker_loop_forked_child_starts_its_own_loop(new_loop: LoopFactory) -> None:
    loop = new_loop(name="fanfold-eventloop-fork")
    released = threading.Event()

    async def in_flight() -> str:
        while not released.is_set():
            await asyncio.sleep(0.002)
        return "parent's body"

    parent_body = loop.submit(in_flight, key="parent", label="in_flight")  # loop runs, busy
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child_uses(loop, write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = json.loads(pipe.read() or b"{}")
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0, report
    assert report == {"pid_matches": True, "thread": "fanfold-eventloop-fork", "running": True}
    released.set()
    assert parent_body.result(timeout=10) == "parent's body"

    async def after() -> int:
        return os.getpid()

    assert loop.submit(after, key="parent", label="after").result(timeout=10) == os.getpid()
