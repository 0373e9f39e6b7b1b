"""Property tests of batch assembly over random arrival scripts."""

from __future__ import annotations

from checkpoint_fakes import ScriptedArrivals
from hypothesis import given
from hypothesis import strategies as st

from runtime.checkpoint.batching import BatchLimits, Checkpoint, Envelope, Waiter

items_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),  # session
        st.integers(min_value=0, max_value=300),  # size
        st.booleans(),  # sync
        st.sampled_from([0.0, 0.0, 0.0005, 0.0015, 0.003]),  # gap before arrival
    ),
    max_size=60,
)
limits_strategy = st.builds(
    BatchLimits,
    max_items=st.integers(min_value=1, max_value=10),
    max_bytes=st.integers(min_value=1, max_value=500),
    async_window=st.sampled_from([0.0, 0.001, 0.002, 0.005]),
)


def index_of(envelope: Envelope) -> int:
    index = envelope.checkpoint.payload
    if not isinstance(index, int):
        raise TypeError(f"payload should be the item index, got {index!r}")
    return index


@given(items=items_strategy, limits=limits_strategy)
def test_intake_batches_preserve_order_limits_and_prompt_flush(
    items: list[tuple[str, int, bool, float]], limits: BatchLimits
) -> None:
    script = []
    arrival = 0.0
    for index, (session, size, sync, gap) in enumerate(items):
        arrival += gap
        cp = Checkpoint(session, index, size, sync)
        script.append((arrival, Envelope.write(cp, Waiter() if sync else None)))
    arrivals = ScriptedArrivals(limits, script)
    clock = arrivals.clock

    batches: list[list[Envelope]] = []
    while sum(map(len, batches)) < len(items):
        arrivals.tag = len(batches)
        started = clock.now
        batch = arrivals.next_batch()
        if not batch:
            raise AssertionError("next_batch() returned no batch while items remained")
        first_queued = max(started, arrivals.arrived_at[index_of(batch[0])])
        # An async-only batch waits for company at most the window after its first item.
        assert clock.now - first_queued <= limits.async_window + 1e-9
        batches.append(batch)

    # Concatenating the batches gives the input order.
    assert [index_of(e) for b in batches for e in b] == list(range(len(items)))

    for batch in batches:
        assert len(batch) <= limits.max_items
        total = sum(e.size for e in batch)
        assert total <= limits.max_bytes or (len(batch) == 1 and total > limits.max_bytes)

    # No timed wait ever started while a sync item was queued and not yet taken.
    for wait in arrivals.timed_waits():
        taken = {index_of(e) for b in batches[: wait.tag] for e in b}
        queued = [i for i in range(wait.arrived) if i not in taken]
        assert not any(items[i][2] for i in queued)
