"""Run messages combined: the start messages a publisher holds at send time, as few messages.

A Django task's enqueue hands its run's start message (`fanfold.execute_run(run_id)`) to the
background publisher. Under a stream of enqueues the publisher holds several at once when it
sends: those of one routing (queue and priority) become one message of the batch task
(`fanfold.execute_runs(run_ids)`), at most `max_runs` runs each, so a worker takes many short
runs for one message instead of one. Pure: no broker, no Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from publisher.messages import Message, Routing

# At most this many runs a message: a batch of long tasks holds its later runs back, and
# more messages let more worker processes share a burst.
MAX_RUNS = 20
# A stream of starts leaves at most once per this many seconds (publisher.background), the
# pace growing to MAX_LINGER_SECONDS while every request carries several: a flood of enqueues
# goes to the workers in fewer, fuller messages, while sparse starts keep the short pace.
LINGER_SECONDS = 0.01
MAX_LINGER_SECONDS = 0.05


def combine_starts(
    messages: Sequence[Message], single: str, batch: str, max_runs: int = MAX_RUNS
) -> list[Message]:
    """`messages` with the messages of task `single` (one run id each) combined by routing
    and keywords (a run's priority) into messages of task `batch` of at most `max_runs` run
    ids, in order.

    A group of one stays as it was. A combined message's key is derived from its runs (its
    first run's key and its run count), so a republish of the same batch is recognisably the
    same message. Other messages pass through, ahead of the combined ones.
    """
    if max_runs < 1:
        raise ValueError("max_runs must be at least 1")
    groups: dict[tuple[Routing, tuple[tuple[str, Any], ...]], list[Message]] = {}
    others: list[Message] = []
    for message in messages:
        if message.task == single and len(message.args) == 1:
            keywords = tuple(sorted(message.kwargs.items()))
            groups.setdefault((message.routing, keywords), []).append(message)
        else:
            others.append(message)
    combined: list[Message] = []
    for (routing, keywords), starts in groups.items():
        for begin in range(0, len(starts), max_runs):
            part = starts[begin : begin + max_runs]
            if len(part) == 1:
                combined.append(part[0])
                continue
            key = f"{part[0].idempotency_key}:n{len(part)}"
            run_ids = [m.args[0] for m in part]
            combined.append(
                Message(batch, key, args=[run_ids], kwargs=dict(keywords), routing=routing)
            )
    return others + combined


def publisher_options(single: str, batch: str) -> dict[str, Any]:
    """A BackgroundPublisher's `combine` and `linger` for the start messages of task `single`
    (combined into messages of task `batch`)."""
    combine = partial(combine_starts, single=single, batch=batch)
    return {"combine": combine, "linger": LINGER_SECONDS, "max_linger": MAX_LINGER_SECONDS}
