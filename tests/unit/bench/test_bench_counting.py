"""bench.counting's reading of what a run_branch message did."""

from __future__ import annotations

import pytest

from bench.counting import branches_taken


@pytest.mark.parametrize(
    ("retval", "taken"),
    [
        ("completed", 1),  # a single branch's message
        ("skipped", 1),
        (None, 1),  # the task raised
        ("completed:10", 10),
        ("completed:7,published:2,skipped:1", 8),  # the published two run as messages of their own
        ("published:9,retrying:1", 1),
    ],
)
def test_branches_taken_counts_what_the_message_ran_or_found_done(
    retval: str | None, taken: int
) -> None:
    assert branches_taken(retval) == taken
