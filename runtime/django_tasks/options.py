"""A Fanfold Tasks backend's OPTIONS, checked: the default retry policy and enqueue-on-commit.

Pure of Django's Tasks framework, so that `manage.py check` can report a bad setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.module_loading import import_string

from runtime.core.retry import RetryPolicy

KNOWN_OPTIONS = frozenset({"retry", "enqueue_on_commit"})
_POLICY_KEYWORDS = frozenset(
    {"max_attempts", "initial_delay", "backoff", "max_delay", "jitter", "retry_on"}
)


class BadTaskOptions(ValueError):
    """The OPTIONS of a Fanfold Tasks backend cannot be used; the message says why."""


@dataclass(frozen=True)
class TaskOptions:
    """`retry`: the policy of tasks that name none (None: Fanfold's default policy).
    `enqueue_on_commit`: True or None (the default), a task enqueued inside an atomic block
    is written in that transaction and sent when it commits (outside one, at once); False,
    it is written and sent at once even inside one, whatever that transaction then does."""

    retry: RetryPolicy | None = None
    enqueue_on_commit: bool | None = None

    @classmethod
    def parse(cls, alias: str, options: Any) -> TaskOptions:
        """The checked options of backend `alias`; raises BadTaskOptions."""
        where = f'TASKS["{alias}"]["OPTIONS"]'
        if options is None:
            return cls()
        if not isinstance(options, dict):
            raise BadTaskOptions(f"{where} must be a dict, not {type(options).__name__}")
        unknown = sorted(set(options) - KNOWN_OPTIONS)
        if unknown:
            raise BadTaskOptions(
                f"{where} has unknown keys {', '.join(unknown)} "
                f"(known: {', '.join(sorted(KNOWN_OPTIONS))})"
            )
        on_commit = options.get("enqueue_on_commit")
        if on_commit is not None and not isinstance(on_commit, bool):
            raise BadTaskOptions(
                f'{where}["enqueue_on_commit"] must be True, False or None (left out: a task '
                "enqueued inside an atomic block is sent when that commits)"
            )
        return cls(retry=_policy(where, options.get("retry")), enqueue_on_commit=on_commit)


def _policy(where: str, value: Any) -> RetryPolicy | None:
    if value is None or isinstance(value, RetryPolicy):
        return value
    if not isinstance(value, dict):
        raise BadTaskOptions(f'{where}["retry"] must be a dict of RetryPolicy keywords')
    unknown = sorted(set(value) - _POLICY_KEYWORDS)
    if unknown:
        raise BadTaskOptions(
            f'{where}["retry"] has unknown keys {", ".join(unknown)} '
            f"(RetryPolicy takes {', '.join(sorted(_POLICY_KEYWORDS))})"
        )
    keywords = dict(value)
    if "retry_on" in keywords:
        keywords["retry_on"] = _exception_types(where, keywords["retry_on"])
    try:
        return RetryPolicy(**keywords)
    except (TypeError, ValueError) as exc:
        raise BadTaskOptions(f'{where}["retry"]: {exc}') from None


def _exception_types(where: str, names: Any) -> tuple[type[BaseException], ...]:
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise BadTaskOptions(f'{where}["retry"]["retry_on"] must be a list of exception paths')
    types: list[type[BaseException]] = []
    for name in names:
        try:
            found = import_string(name) if isinstance(name, str) else name
        except ImportError:
            raise BadTaskOptions(f'{where}["retry"]["retry_on"]: cannot import {name!r}') from None
        if not isinstance(found, type) or not issubclass(found, BaseException):
            raise BadTaskOptions(f'{where}["retry"]["retry_on"]: {name!r} is not an exception')
        types.append(found)
    return tuple(types)
