"""Search attributes: set at start, changed by `ctx.set_search` durably (recorded, replayed,
forked), and refused when undeclared or of the wrong type."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from search_flows import CALLS

from runtime import fork, start
from runtime.core.errors import InvalidArguments
from runtime.models import Event, SearchAttribute, SearchPending, Step
from runtime.store.runs.search_pending import insert_statement
from runtime.store.runs.search_rows import attribute_rows, attributes_of
from runtime.testing import InMemoryDispatcher

DUE = datetime(2026, 12, 24, 9, 30, tzinfo=UTC)


def test_search_attributes_set_at_start_in_the_log_and_rows(runs: InMemoryDispatcher) -> None:
    values = {"customer": 42, "region": "eu", "amount": 10, "vip": True, "due": DUE}
    run = start("tests.search.quick", search=values)
    assert attributes_of([run.id])[run.id] == {
        "amount": 10.0,
        "customer": 42,
        "due": DUE.isoformat(),
        "region": "eu",
        "vip": True,
    }
    created = Event.objects.get(run_id=run.id, seq=1)
    assert created.payload["search"]["customer"] == 42
    assert created.payload["search"]["due"] == DUE.isoformat()


def test_search_a_starts_attributes_are_one_statement_text_whatever_their_number() -> None:
    # PostgreSQL's start inserts them as one pending row: one SQL text for the driver's query
    # cache and one prepared statement, however many attributes a start carries.
    kinds = {"customer": "int", "region": "str", "due": "datetime"}
    run_id = uuid.uuid4()
    one = attribute_rows(run_id, kinds, {"customer": 1})
    three = attribute_rows(run_id, kinds, {"customer": 1, "region": "eu", "due": DUE.isoformat()})
    (sql_one, params_one), (sql_three, params_three) = (
        insert_statement(one),
        insert_statement(three),
    )
    assert sql_one == sql_three
    assert len(params_one) == len(params_three) == 2
    assert json.loads(params_three[1]) == {
        "customer": {"kind": "int", "num": 1.0},
        "region": {"kind": "str", "text": "eu"},
        "due": {"kind": "datetime", "at": DUE.isoformat()},
    }


def test_search_set_search_is_recorded_once_and_replayed(runs: InMemoryDispatcher) -> None:
    run = start("tests.search.order", "o-1", search={"customer": 7, "region": "us"})
    runs.join()
    assert run.wait(timeout=10) == "o-1"
    assert CALLS["o-1"] == 1
    assert attributes_of([run.id])[run.id] == {"customer": 7, "region": "eu-west", "amount": 250.5}
    sets = Event.objects.filter(run_id=run.id, type="search_set")
    assert [e.payload for e in sets] == [{"search": {"region": "eu-west", "amount": 250.5}}]
    step = Step.objects.get(run_id=run.id, kind="search")
    assert (step.name, step.position, step.status) == ("set_search", 2, "completed")


def test_search_set_search_from_an_async_workflow(runs: InMemoryDispatcher) -> None:
    run = start("tests.search.async_order")
    runs.join()
    assert run.wait(timeout=10) == "done"
    assert attributes_of([run.id])[run.id] == {"stage": "shipped"}
    assert Event.objects.filter(run_id=run.id, type="search_set").count() == 2


def test_search_a_replay_of_an_older_set_never_overwrites_a_newer_value(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.search.async_order")
    runs.join()
    run.wait(timeout=10)
    row = SearchAttribute.objects.get(run_id=run.id, name="stage")
    assert (row.text, row.position) == ("shipped", 3)
    from runtime.store.runs.search_rows import attribute_rows, set_attributes

    set_attributes(attribute_rows(run.id, {"stage": "str"}, {"stage": "packed"}, 1))
    assert SearchAttribute.objects.get(run_id=run.id, name="stage").text == "shipped"


def test_search_a_fork_copies_the_attributes_recorded_before_its_position(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.search.order", "o-2", search={"customer": 8})
    runs.join()
    run.wait(timeout=10)
    before = fork(run.id, 2)  # set_search at position 2 runs again
    after = fork(run.id, 3)  # its record is copied
    assert attributes_of([before.id])[before.id] == {"customer": 8}
    assert attributes_of([after.id])[after.id] == {
        "customer": 8,
        "region": "eu-west",
        "amount": 250.5,
    }
    assert Event.objects.get(run_id=before.id, seq=1).payload["search"] == {"customer": 8}
    runs.join()
    assert before.wait(timeout=10) == "o-2"
    assert attributes_of([before.id])[before.id]["region"] == "eu-west"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"nope": 1}, "declares no search attribute 'nope'"),
        ({"customer": "42"}, "'customer' must be of type int"),
        ({"customer": True}, "'customer' must be of type int"),
        ({"customer": 2**60}, "'customer' must be of type int"),
        ({"amount": "1.5"}, "'amount' must be of type float"),
        ({"amount": float("nan")}, "'amount' must be of type float"),
        ({"vip": 1}, "'vip' must be of type bool"),
        ({"region": 5}, "'region' must be of type str"),
        ({"region": "x" * 256}, "'region' must be of type str"),
        ({"due": datetime(2026, 1, 1)}, "datetime with a time zone"),
        ({"due": "tomorrow"}, "datetime (ISO 8601 text)"),
        (["customer"], "search takes a dict"),
    ],
)
def test_search_start_refuses_undeclared_names_and_wrong_types(
    runs: InMemoryDispatcher, values: object, message: str
) -> None:
    with pytest.raises(InvalidArguments, match=message.replace("(", r"\(").replace(")", r"\)")):
        start("tests.search.quick", search=values)  # type: ignore[arg-type]
    assert not SearchAttribute.objects.exists() and not SearchPending.objects.exists()


def test_search_set_search_refuses_a_wrong_type_and_fails_the_run(
    runs: InMemoryDispatcher,
) -> None:
    run = start("tests.search.bad_set")
    runs.join()
    row = run.refresh()
    assert row.status == "failed"
    assert row.error["type"] == "InvalidArguments"
    assert "'customer' must be of type int" in row.error["message"]
    assert not SearchAttribute.objects.filter(run_id=run.id).exists()


def test_search_workflow_declaration_refuses_unknown_types() -> None:
    from runtime import workflow

    with pytest.raises(TypeError, match="use int, str, float, bool or datetime"):
        workflow(name="tests.search.bad_decl", search={"x": list})
    with pytest.raises(TypeError, match="must start with a letter"):
        workflow(name="tests.search.bad_decl", search={"a__b": int})
