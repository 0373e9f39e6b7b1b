"""The base class of every error Fanfold raises on purpose."""

from __future__ import annotations

from typing import Any


class FanfoldError(Exception):
    """Base class of every error Fanfold raises on purpose.

    `code` is stable and machine-readable (the API's error envelope, the CLI's `--json`). The
    pickled form is the class and its message (plus a subclass's own fields), so an error
    crosses Celery and comes back the same.
    """

    code = "fanfold_error"

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message,))

    def __str__(self) -> str:
        return self.message
