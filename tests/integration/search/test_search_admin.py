"""The run admin and search attributes: the list filter of the chosen workflow's attributes,
the search box's terms and values, and the run page's attributes with their history."""

from __future__ import annotations

import search_flows  # noqa: F401  (registers the workflows)
from django.test import Client

from runtime import start
from runtime.testing import InMemoryDispatcher
from tests.support.users import operator, starter

LIST = "/admin/runtime/run/"


def staff(username: str, everything: bool = True) -> Client:
    make = operator if everything else starter
    client = Client()
    client.force_login(make(username, is_staff=True))
    return client


def test_search_admin_filters_searches_and_shows_attributes(runs: InMemoryDispatcher) -> None:
    mine = start("tests.search.order", "o-adm", search={"customer": 42, "region": "us"})
    other = start("tests.search.quick", search={"customer": 7, "region": "eu-admin"})
    runs.join()
    mine.wait(timeout=10)
    admin = staff("staff-search")
    chosen = admin.get(LIST, {"workflow__exact": "tests.search.order"}).content.decode()
    assert "customer = 42" in chosen and "region = eu-west" in chosen  # the filter's choices
    filtered = admin.get(LIST, {"workflow__exact": "tests.search.quick", "search": "customer=7"})
    assert str(other.id)[-8:] in filtered.content.decode()
    assert str(mine.id)[-8:] not in filtered.content.decode()
    by_terms = admin.get(LIST, {"q": "customer=42 amount__gte=100"}).content.decode()
    assert str(mine.id)[-8:] in by_terms and str(other.id)[-8:] not in by_terms
    by_value = admin.get(LIST, {"q": "eu-admin"}).content.decode()
    assert str(other.id)[-8:] in by_value and str(mine.id)[-8:] not in by_value
    assert admin.get(LIST, {"q": "customer=abc"}).status_code == 200  # finds nothing, no 500
    page = admin.get(f"{LIST}{mine.id}/change/").content.decode()
    assert "Search attributes" in page and "eu-west" in page and "search_set" in page


def test_search_admin_never_lists_another_users_runs(runs: InMemoryDispatcher) -> None:
    theirs = start("tests.search.quick", search={"customer": 42, "region": "theirs"})
    mine = staff("staff-own", everything=False)
    assert str(theirs.id)[-8:] not in mine.get(LIST, {"q": "customer=42"}).content.decode()
    assert str(theirs.id)[-8:] not in mine.get(LIST, {"q": "theirs"}).content.decode()
