"""Which sessions are poisoned, and by what: shared by callers and the writer thread."""

from __future__ import annotations

import threading
from collections import OrderedDict

from runtime.checkpoint.batching import NO_SESSION
from runtime.checkpoint.errors import CheckpointFailed

MAX_POISONED_SESSIONS = 10_000


class PoisonedSessions:
    """The first failure of each poisoned session.

    Bounded so a long-lived worker does not grow without limit: past ``max_sessions`` the
    oldest poisoned session is forgotten. A session is one execution of one run, so an old
    entry only matters if that execution is still writing after thousands of later failures.
    """

    def __init__(self, max_sessions: int = MAX_POISONED_SESSIONS) -> None:
        self._lock = threading.Lock()
        self._causes: OrderedDict[str, BaseException] = OrderedDict()
        self._max_sessions = max_sessions

    def cause(self, session: str) -> BaseException | None:
        """Return the exception that poisoned ``session``, or ``None``."""
        if not self._causes:
            return None  # the usual case, asked per checkpoint: one atomic look, no lock
        with self._lock:
            return self._causes.get(session)

    def poison(self, session: str, cause: BaseException) -> None:
        """Record ``cause`` for ``session`` unless it is already poisoned."""
        if session == NO_SESSION:
            return  # a write of its own fails alone
        with self._lock:
            if session in self._causes:
                return
            self._causes[session] = cause
            if len(self._causes) > self._max_sessions:
                self._causes.popitem(last=False)

    def forget(self, session: str) -> None:
        """Clear ``session``'s poison, if any."""
        with self._lock:
            self._causes.pop(session, None)

    def raise_if_poisoned(self, session: str) -> None:
        """Raise a fresh :class:`CheckpointFailed` chained to the cause, if poisoned."""
        cause = self.cause(session)
        if cause is not None:
            raise CheckpointFailed.caused_by(session, cause)
