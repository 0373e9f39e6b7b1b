"""The JSON parser's raw body limit and strictness."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework.exceptions import ParseError

from api.exceptions import RequestTooLarge
from api.parsers import LimitedJSONParser
from runtime import conf


@pytest.fixture
def limit(settings: Any) -> int:
    settings.FANFOLD = {"MAX_PAYLOAD_BYTES": 64}
    conf.reset()
    yield 64
    conf.reset()


def parse(body: bytes, declared: int | None = None) -> Any:
    request = SimpleNamespace(
        META={"CONTENT_LENGTH": str(declared if declared is not None else len(body))}
    )
    return LimitedJSONParser().parse(io.BytesIO(body), "application/json", {"request": request})


def test_api_parser_reads_json_within_limit(limit: int) -> None:
    assert parse(b'{"result": [1, 2.5, null]}') == {"result": [1, 2.5, None]}


def test_api_parser_refuses_declared_length_over_limit(limit: int) -> None:
    with pytest.raises(RequestTooLarge):
        parse(b"{}", declared=limit + 1)


def test_api_parser_refuses_body_over_limit_whatever_was_declared(limit: int) -> None:
    with pytest.raises(RequestTooLarge):
        parse(b'"' + b"x" * limit + b'"', declared=10)


def test_api_parser_accepts_body_exactly_at_limit(limit: int) -> None:
    assert parse(b'"' + b"x" * (limit - 2) + b'"') == "x" * (limit - 2)


@pytest.mark.parametrize("body", [b"{nope", b"NaN", b'{"a": Infinity}', b"\xff\xfe"])
def test_api_parser_rejects_what_is_not_strict_json(limit: int, body: bytes) -> None:
    with pytest.raises(ParseError):
        parse(body)
