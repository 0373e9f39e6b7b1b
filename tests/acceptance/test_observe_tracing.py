"""OpenTelemetry spans of a fan-out across two worker processes, exported to a file per process.

Each branch's step span must link to the publish span whose request carried its message,
whichever process published it and whichever ran the branch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from runtime import start
from runtime.testing import use_writer
from tests.acceptance import observe_flows as flows
from tests.support.workers import running_worker

pytestmark = pytest.mark.django_db(transaction=True)

BRANCHES = 40


@pytest.fixture(autouse=True)
def in_process(counters_redis: Any) -> Iterator[None]:
    with use_writer():
        yield


def read_spans(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("spans-*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def test_observe_branch_spans_link_to_the_publish_span_across_two_workers(
    tmp_path: Path,
) -> None:
    env = {"FANFOLD_WORKFLOW_MODULES": flows.MODULE, flows.SPAN_DIR: str(tmp_path),
           "FANFOLD_BRANCH_CHUNK": "10"}  # fmt: skip
    with ExitStack() as workers:
        for name in ("trace-a", "trace-b"):
            workers.enter_context(running_worker(name, "threads", 3, **env))
        handle = start(flows.fan, BRANCHES, 0.05)
        assert handle.wait(timeout=90, poll_interval=0.05) == sum(range(BRANCHES)) - 1
    run_id = str(handle.id)
    spans = read_spans(tmp_path)  # only this run's, since the workers ran nothing else
    by_id = {s["span_id"]: s for s in spans}

    publishes = [s for s in spans if s["name"] == "fanfold.publish"]
    # The fan-out's four chunks, then the branches each chunk published on its own when its
    # time was up (naps of 0.05 s: a few a chunk), in publishes of their own.
    counts = [s["attributes"]["messaging.batch.message_count"] for s in publishes]
    assert BRANCHES // 10 in counts and sum(counts) <= BRANCHES
    steps = [s for s in spans if s["name"] == "fanfold.step"]
    branch_steps = [s for s in steps if s["attributes"]["fanfold.step.position"] > 1]
    assert len(branch_steps) == BRANCHES
    for span in branch_steps:
        assert span["attributes"]["fanfold.outcome"] == "completed"
        [link] = span["links"]
        assert by_id[link]["name"] == "fanfold.publish"
    # Two processes ran branches, and some linked across processes.
    assert len({s["pid"] for s in branch_steps}) == 2
    assert any(by_id[s["links"][0]]["pid"] != s["pid"] for s in branch_steps)

    [inline] = [s for s in steps if s not in branch_steps]
    # A step's span includes the wait for its checkpoints; commits are no spans of their own.
    waited = inline["attributes"].pop("fanfold.checkpoint.seconds")
    # A branch in a chunk's window has its report committed with the window, after its span.
    assert waited > 0 and all(
        s["attributes"].get("fanfold.checkpoint.seconds", 1) > 0 for s in branch_steps
    )
    assert inline["attributes"] == {
        "fanfold.run_id": run_id,
        "fanfold.workflow": "tests.observe.fan",
        "fanfold.step.name": "tests.observe.nap",
        "fanfold.step.position": 1,
        "fanfold.step.attempt": 1,
        "fanfold.outcome": "completed",
    }
    # The pass that fanned out suspended; the one after the fan-in completed the run (a pass
    # woken while suspending replays and says so).
    outcomes = [s["attributes"]["fanfold.outcome"] for s in spans if s["name"] == "fanfold.run"]
    assert outcomes.count("completed") == 1 and "suspended" in outcomes
    assert by_id[inline["parent"]]["name"] == "fanfold.run"
    assert {s["name"] for s in spans} == {"fanfold.run", "fanfold.step", "fanfold.publish"}
