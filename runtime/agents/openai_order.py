"""Starting parallel tool calls in the order the model emitted their call ids.

The Agents SDK runs a response's function tools as concurrent tasks, each passing through
hooks and guardrails before it invokes the tool, so the order in which they reach
`ctx.step` (which takes the step's position when called) is the event loop's, not the
model's. `CallOrder` gates them: a tool call takes its step position only after every call
the model emitted before it took its own, so a replay assigns the same positions.
"""

from __future__ import annotations

import asyncio
import itertools

# A call the model emitted but the SDK never invokes (a guardrail rejected it, it waits for an
# approval) takes no position; its successors stop waiting for it after this many seconds.
SKIPPED_CALL_GRACE = 5.0


class CallOrder:
    """The function-tool call ids of the latest model response, in the model's order."""

    def __init__(self) -> None:
        self._turns: dict[str, asyncio.Future[None]] = {}
        self._before: dict[str, str] = {}
        self._arrived: set[str] = set()

    def expect(self, call_ids: list[str]) -> None:
        """A new model response: its tool calls take their positions in this order."""
        loop = asyncio.get_running_loop()
        self._turns = {call_id: loop.create_future() for call_id in call_ids}
        self._before = {after: before for before, after in itertools.pairwise(call_ids)}
        self._arrived = set()
        if call_ids:
            self._turns[call_ids[0]].set_result(None)

    async def turn(self, call_id: str | None) -> None:
        """Wait until every call emitted before `call_id` has taken its position (or, never
        arriving, has been given up on after the grace)."""
        gate = self._turns.get(call_id or "")
        if gate is None or call_id is None:
            return
        self._arrived.add(call_id)
        while not gate.done():
            if self._before.get(call_id) in self._arrived:
                await asyncio.shield(gate)  # the call before is on its way: it releases us
                return
            try:
                await asyncio.wait_for(asyncio.shield(gate), SKIPPED_CALL_GRACE)
            except TimeoutError:
                if self._before.get(call_id) not in self._arrived:
                    return  # the call before never came: it takes no position

    def taken(self, call_id: str | None) -> None:
        """`call_id` has its position (or failed to take one): the next call may go."""
        for after, before in self._before.items():
            if before == call_id and not self._turns[after].done():
                self._turns[after].set_result(None)
