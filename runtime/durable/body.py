"""The one place a step body runs: inline steps, condition polls and fan-out branches alike.

`StepBody` is one attempt of one body. Entered, it is the attempt as metrics and spans see it
(`runtime.observe.attempts.StepAttempt`); its `run()` is the only call of user step code in
the runtime: the body runs with its `StepInfo` current, is timed, and its result is checked as
a JSON value within the payload limit. A failure of user code comes back as the outcome's
`error` for the caller to record; control flow (`Suspend`) and interpreter exits pass through.
The caller records the outcome and sets `.outcome` (the attempt's label) before the block ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from types import TracebackType
from typing import Any

from runtime.core.control import Suspend
from runtime.core.jsonvalues import checked
from runtime.durable.stepinfo import StepInfo, running
from runtime.observe.attempts import StepAttempt


@dataclass(frozen=True)
class BodyCall:
    """What one attempt runs: the body, its arguments, and who it is (`info`).

    `what` names the body in errors about its result ("step 'x'", "condition 'x'")."""

    info: StepInfo
    fn: Callable[..., Any]
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    what: str = ""


@dataclass(frozen=True)
class BodyOutcome:
    """How a body ended: its checked result and that result's size, or the error it raised.

    `seconds` is the body's own time (its result check excluded)."""

    result: Any = None
    size: int = 0
    error: BaseException | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


class StepBody:
    """`with StepBody(call) as body: outcome = body.run(limit); ...; body.outcome = "..."`."""

    __slots__ = ("_observed", "call")

    def __init__(self, call: BodyCall, traceparent: str | None = None) -> None:
        self.call = call
        info = call.info
        self._observed = StepAttempt(
            info.run_id, info.name, info.position, info.attempt, traceparent
        )

    @property
    def outcome(self) -> str:
        """The attempt's label for metrics and spans; "failed" unless the caller says more."""
        return self._observed.outcome

    @outcome.setter
    def outcome(self, label: str) -> None:
        self._observed.outcome = label

    def __enter__(self) -> StepBody:
        self._observed.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._observed.__exit__(kind, exc, tb)

    def run(self, max_bytes: int) -> BodyOutcome:
        """Call the body once and check its result; every failure of user code is returned."""
        call = self.call
        started = perf_counter()
        try:
            with running(call.info):
                raw = call.fn(*call.args, **call.kwargs)
            seconds = perf_counter() - started
            result, size = checked(raw, f"{call.what or call.info.name} result", max_bytes)
        except (Suspend, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # every failure of user code is the caller's to record
            return BodyOutcome(error=exc, seconds=perf_counter() - started)
        return BodyOutcome(result, size, None, seconds)
