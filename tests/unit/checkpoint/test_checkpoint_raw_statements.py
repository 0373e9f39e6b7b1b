"""The store's statement texts as a raw cursor takes them: `%s` numbered once, `%%` a percent."""

from __future__ import annotations

import pytest

from runtime.store.raw_statements import native


def test_placeholders_are_numbered_in_order() -> None:
    sql = "WITH u AS (UPDATE t SET a = %s WHERE id = %s) SELECT %s::int, '100%%'"
    assert native(sql) == b"WITH u AS (UPDATE t SET a = $1 WHERE id = $2) SELECT $3::int, '100%'"


def test_a_text_without_placeholders_is_sent_as_it_is() -> None:
    assert native("COMMIT") == b"COMMIT"


def test_a_text_is_converted_once() -> None:
    sql = "SELECT %s, %s, %s"
    assert native(sql) is native(sql)


@pytest.mark.parametrize("sql", ["SELECT %b", "SELECT %(name)s", "SELECT %t"])
def test_other_placeholders_are_refused(sql: str) -> None:
    with pytest.raises(ValueError, match="only %s placeholders"):
        native(sql)
