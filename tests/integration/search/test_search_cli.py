"""`fanfold runs --where NAME[__OP]=V`: filters by search attributes, as a user sees them."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import search_flows  # noqa: F401  (registers the workflows)
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from runtime import start
from runtime.models import Run
from runtime.testing import InMemoryDispatcher


def fanfold(*args: str) -> str:
    out = StringIO()
    call_command("fanfold", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_search_cli_runs_where(runs: InMemoryDispatcher) -> None:
    small = start("tests.search.quick", search={"customer": 42, "amount": 50})
    big = start("tests.search.quick", search={"customer": 42, "amount": 150})
    start("tests.search.quick", search={"customer": 7, "amount": 500})
    listed = json.loads(fanfold("runs", "--where", "customer=42", "--json"))
    assert [r["id"] for r in listed] == [str(big.id), str(small.id)]
    assert listed[0]["search"] == {"amount": 150.0, "customer": 42}
    both = fanfold("runs", "--where", "customer=42", "--where", "amount__gte=100", "--json")
    assert [r["id"] for r in json.loads(both)] == [str(big.id)]
    text = fanfold("runs", "--where", "customer__in=7,42", "--status", "pending,running")
    assert str(small.id) in text and "customer=42" in text


def test_search_cli_runs_as_a_user_never_lists_another_users_runs(
    runs: InMemoryDispatcher,
) -> None:
    ada, eve = User.objects.create_user("ada-cli"), User.objects.create_user("eve-cli")
    mine = start("tests.search.quick", owner=ada, search={"customer": 42})
    start("tests.search.quick", owner=eve, search={"customer": 42})
    listed = json.loads(fanfold("runs", "--where", "customer=42", "--user", "ada-cli", "--json"))
    assert [r["id"] for r in listed] == [str(mine.id)]
    with pytest.raises(CommandError, match="no active user"):
        fanfold("runs", "--user", "nobody")


@pytest.mark.parametrize(
    "where", ["customer", "customer=abc", "nope=1", "customer__between=1", "=4"]
)
def test_search_cli_refuses_a_bad_where(runs: InMemoryDispatcher, where: str) -> None:
    start("tests.search.quick", search={"customer": 42})
    with pytest.raises(CommandError, match="invalid_filter"):
        fanfold("runs", "--where", where)
    assert Run.objects.count() == 1


def test_search_startrun_sets_attributes_and_refuses_wrong_ones(runs: InMemoryDispatcher) -> None:
    from runtime.store.runs.search_rows import attributes_of

    out = StringIO()
    call_command("startrun", "tests.search.quick", "--search", '{"customer": 42}', stdout=out)
    run_id = Run.objects.get().id
    assert attributes_of([run_id])[run_id] == {"customer": 42}
    with pytest.raises(CommandError, match="must be of type int"):
        call_command("startrun", "tests.search.quick", "--search", '{"customer": "x"}',
                     stdout=StringIO())  # fmt: skip
    with pytest.raises(CommandError, match="--search must be a JSON object"):
        call_command("startrun", "tests.search.quick", "--search", "[1]", stdout=StringIO())
    assert Run.objects.count() == 1


def test_search_cli_runs_by_app_version(runs: InMemoryDispatcher) -> None:
    old, new = start("tests.search.quick"), start("tests.search.quick")
    Run.objects.filter(id=old.id).update(app_version="v-old")
    listed = json.loads(fanfold("runs", "--app-version", "v-old", "--json"))
    assert [(r["id"], r["app_version"]) for r in listed] == [(str(old.id), "v-old")]
    assert str(new.id) not in fanfold("runs", "--app-version", "v-old")
