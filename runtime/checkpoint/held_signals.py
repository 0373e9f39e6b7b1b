"""Signal handlers held back while the main thread writes a checkpoint batch itself.

Python runs signal handlers in the main thread, between any two bytecodes, and a handler may
raise: Celery's soft time limit raises SoftTimeLimitExceeded in a prefork child (SIGUSR1),
SIGINT raises KeyboardInterrupt. An exception landing in the middle of a batch's write could
keep the sink's turn taken for good or cut a transaction short. So for the length of a
main-thread turn, the Python handlers of the signals that commonly raise are swapped for one
that only notes the signal; afterwards the originals are put back and the noted signals raised
again, so the handlers run (and raise) once the turn is given back.

A signal delivered while the handlers are being swapped runs its own handler, outside the
turn, as any signal before a write does. A held signal waits for the turn: a commit, or a
failed connection attempt.
"""

from __future__ import annotations

import importlib
import os
import signal
import threading
from contextlib import AbstractContextManager, nullcontext
from types import FrameType, TracebackType
from typing import Any

# The C module under `signal`: its wrappers convert every number and handler to an enum,
# 2.5 µs a call against 0.15, and a main-thread write makes up to 14 calls.
_signals: Any = importlib.import_module("_signal")

HELD = tuple(
    getattr(signal, name)
    for name in ("SIGALRM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)


class HeldSignals:
    """`with HeldSignals():` in the main thread: the Python handlers of `HELD` run after the
    block, not inside it. Handlers that are not Python callables (default, ignored) stay."""

    __slots__ = ("_noted", "_saved")

    def __init__(self) -> None:
        self._noted: list[int] = []
        self._saved: dict[int, Any] = {}

    def __enter__(self) -> HeldSignals:
        note = self._note  # one bound method for every swapped signal
        try:
            for signum in HELD:
                handler = _signals.getsignal(signum)
                if callable(handler):
                    self._saved[signum] = handler
                    _signals.signal(signum, note)
        except BaseException:
            self._restore()  # a handler raised mid-swap: the block never starts
            raise
        return self

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if signum not in self._noted:
            self._noted.append(signum)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._restore()
        finally:
            _deliver(self._noted)

    def _restore(self) -> None:
        """Put every saved handler back, even if one already put back raises meanwhile (its
        exception is raised after the rest): a handler left swapped would swallow its signal
        for good."""
        raised: BaseException | None = None
        for signum, handler in self._saved.items():
            while True:
                try:
                    _signals.signal(signum, handler)  # again after an interruption: harmless
                    break
                except BaseException as exc:
                    raised = raised or exc
        self._saved.clear()
        if raised is not None:
            raise raised


def held_in_main_thread() -> AbstractContextManager[object]:
    """What a caller of a checkpoint write takes the sink's turn under: in the main thread,
    where signal handlers raise (Celery's prefork pool runs tasks there, and its soft time limit
    raises SoftTimeLimitExceeded), the handlers wait until the turn is given back, so no
    exception lands mid-write. No signal handler runs in other threads."""
    return HeldSignals() if threading.current_thread() is threading.main_thread() else _NO_HOLD


_NO_HOLD = nullcontext()


def _deliver(noted: list[int]) -> None:
    """Raise the noted signals again, in the order they came. A handler that raises ends
    this; the signals after it go to the process, whose interpreter runs their handlers at
    its next check, as it does for signals that arrive together."""
    for index, signum in enumerate(noted):
        try:
            signal.raise_signal(signum)
        except BaseException:
            for later in noted[index + 1 :]:
                os.kill(os.getpid(), later)
            raise
