"""The Tasks backend's pure parts: OPTIONS checking, priority bands, exception class paths."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from runtime import RetryPolicy
from runtime.django_tasks.backend import FanfoldBackend, run_priority
from runtime.django_tasks.options import BadTaskOptions, TaskOptions
from runtime.django_tasks.results import class_path


def test_tasks_backend_options_default_to_no_policy_and_on_commit_when_in_a_transaction() -> None:
    assert TaskOptions.parse("default", None) == TaskOptions(None, None)
    assert TaskOptions.parse("default", {}) == TaskOptions(None, None)


@pytest.mark.parametrize("value", [True, False, None])
def test_tasks_backend_options_enqueue_on_commit_takes_true_false_or_none(value: object) -> None:
    assert TaskOptions.parse("default", {"enqueue_on_commit": value}).enqueue_on_commit is value


def test_tasks_backend_options_retry_takes_retry_policy_keywords() -> None:
    parsed = TaskOptions.parse(
        "default", {"retry": {"max_attempts": 5, "jitter": False, "retry_on": ["builtins.OSError"]}}
    )
    assert parsed.retry == RetryPolicy(max_attempts=5, jitter=False, retry_on=(OSError,))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ([], "must be a dict"),
        ({"retries": {}}, "unknown keys retries"),
        ({"retry": 3}, "dict of RetryPolicy keywords"),
        ({"retry": {"attempts": 3}}, "unknown keys attempts"),
        ({"retry": {"max_attempts": 0}}, "max_attempts"),
        ({"retry": {"retry_on": "builtins.OSError"}}, "list of exception paths"),
        ({"retry": {"retry_on": ["no.such.Error"]}}, "cannot import"),
        ({"retry": {"retry_on": ["os.path"]}}, "not an exception"),
        ({"enqueue_on_commit": "yes"}, "must be True, False or None"),
        ({"enqueue_on_commit": 1}, "must be True, False or None"),
    ],
)
def test_tasks_backend_options_refuse_what_cannot_be_used(options: object, message: str) -> None:
    with pytest.raises(BadTaskOptions, match=message):
        TaskOptions.parse("default", options)


def test_tasks_backend_bad_options_are_improperly_configured() -> None:
    with pytest.raises(ImproperlyConfigured, match=r'TASKS\["x"\]\["OPTIONS"\]'):
        FanfoldBackend("x", {"OPTIONS": {"retry": {"backoff": 0.5}}})


def test_tasks_backend_priorities_fall_in_ten_ordered_bands() -> None:
    levels = [run_priority(p) for p in range(-100, 101)]
    assert levels == sorted(levels) and (levels[0], levels[-1]) == (0, 9)
    assert {levels.count(n) for n in range(10)} <= {20, 21}
    assert run_priority(0) == 4


def test_tasks_backend_class_path_comes_from_the_traceback() -> None:
    tb = "Traceback (most recent call last):\n  File 'x.py'\nmy.app.errors.Outer.Declined: no\n"
    assert class_path("Declined", tb) == "my.app.errors.Outer.Declined"
    assert class_path("KeyError", "Traceback...\nKeyError: 'k'\n") == "builtins.KeyError"
    assert class_path("Custom", "") == "Custom"


def test_tasks_backend_system_check_reports_bad_options(settings: object) -> None:
    from runtime.django_tasks import BACKEND_PATH, check_options

    settings.TASKS = {"default": {"BACKEND": BACKEND_PATH, "OPTIONS": {"retry": 3}}}  # type: ignore[attr-defined]
    assert [error.id for error in check_options()] == ["fanfold.E900"]
    settings.TASKS = {"default": {"BACKEND": BACKEND_PATH}}  # type: ignore[attr-defined]
    assert check_options() == []


def test_tasks_backend_aliases_and_named_queues_follow_a_changed_tasks_setting(
    settings: object,
) -> None:
    from runtime.django_tasks import BACKEND_PATH, configured_aliases
    from runtime.django_tasks.queues import named_queues

    settings.TASKS = {"default": {"BACKEND": BACKEND_PATH}}  # type: ignore[attr-defined]
    assert configured_aliases() == ("default",) and not named_queues()
    settings.TASKS = {  # type: ignore[attr-defined]
        "default": {"BACKEND": BACKEND_PATH},
        "reports": {"BACKEND": BACKEND_PATH, "QUEUES": ["default", "reports"]},
        "other": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"},
    }
    assert configured_aliases() == ("default", "reports") and named_queues()
