"""A record of the Redis pipelines a test executed (see the ``pipelines`` fixture)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PipelineSpy:
    """Records the command names of every Redis pipeline executed; can fail chosen ones.

    ``fail_publish`` holds the indexes (0-based, among pipelines that LPUSH) to fail instead
    of executing, as a broker connection lost mid-request would.
    """

    executed: list[list[str]] = field(default_factory=list)
    fail_publish: set[int] = field(default_factory=set)

    @property
    def publishes(self) -> list[list[str]]:
        """The executed pipelines that published messages."""
        return [commands for commands in self.executed if "LPUSH" in commands]
