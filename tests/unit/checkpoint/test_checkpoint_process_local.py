"""ProcessLocal: one instance per process, rebuilt in a forked child."""

from __future__ import annotations

import json
import os

import pytest

from runtime.checkpoint import Checkpoint, CheckpointWriter, MemorySink
from runtime.process.local import ProcessLocal


def test_process_local_returns_one_instance_per_process() -> None:
    builds: list[object] = []

    def build() -> object:
        builds.append(object())
        return builds[-1]

    local = ProcessLocal(build)

    assert local.get() is local.get()
    assert len(builds) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_process_local_builds_new_writer_after_fork() -> None:
    sinks: list[MemorySink] = []

    def build() -> CheckpointWriter:
        sinks.append(MemorySink())
        return CheckpointWriter(sinks[-1])

    local = ProcessLocal(build)
    parent_writer = local.get()
    parent_writer.write(Checkpoint("parent", 1))  # the parent's writer thread is running
    read_end, write_end = os.pipe()

    pid = os.fork()
    if pid == 0:  # child: report through the pipe, never return into pytest
        status = 1
        try:
            os.close(read_end)
            child_writer = local.get()
            child_writer.write(Checkpoint("child", 2))
            try:
                parent_writer.submit(Checkpoint("child", 3))
                inherited_refused = False
            except RuntimeError:
                inherited_refused = True
            report = {
                "fresh": child_writer is not parent_writer,
                "stable": local.get() is child_writer,
                "written": [c.payload for c in sinks[-1].checkpoints],
                "inherited_refused": inherited_refused,
            }
            os.write(write_end, json.dumps(report).encode())
            status = 0
        except BaseException as exc:
            os.write(write_end, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(status)

    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = json.loads(pipe.read() or b"{}")
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0, report
    assert report == {"fresh": True, "stable": True, "written": [2], "inherited_refused": True}
    assert local.get() is parent_writer
    assert [c.payload for c in sinks[0].checkpoints] == [1]
    parent_writer.close()
