"""The JSON parser's raw body limit, nesting limit and strictness."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework.exceptions import ParseError

from api.parsers import LimitedJSONParser, nesting_depth
from api.request_errors import RequestTooLarge
from runtime import conf


@pytest.fixture
def limit(settings: Any) -> int:
    settings.FANFOLD = {"MAX_PAYLOAD_BYTES": 64, "MAX_JSON_DEPTH": 3}
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


@pytest.mark.parametrize(
    "body", [b"{nope", b"NaN", b'{"a": Infinity}', b"\xff\xfe", b"[1e400]", b"-1e999"]
)
def test_api_parser_rejects_what_is_not_strict_json(limit: int, body: bytes) -> None:
    with pytest.raises(ParseError):
        parse(body)


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [[1], {"b": []}]}', 4),
        ('["[[[[", "}}}", "\\"[["]', 1),
        ("[" * 1000 + "]" * 1000, 1000),
        ("[" * 5000, 5000),  # not JSON: counted, never under
    ],
)
def test_api_parser_nesting_depth_counts_brackets_outside_strings(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth


def test_api_parser_accepts_nesting_at_the_limit(limit: int) -> None:
    assert parse(b'[[["[[[["]]]') == [[["[[[["]]]


@pytest.mark.parametrize("body", [b"[[[[1]]]]", b"[" * 100_000, b'{"a":' * 50 + b"1" + b"}" * 50])
def test_api_parser_refuses_nesting_over_the_limit(settings: Any, body: bytes) -> None:
    settings.FANFOLD = {"MAX_JSON_DEPTH": 3}
    conf.reset()
    with pytest.raises(ParseError, match="FANFOLD_MAX_JSON_DEPTH"):
        parse(body)
    conf.reset()


def test_api_parser_refuses_a_huge_integer_with_advice_a_client_can_follow(
    settings: Any,
) -> None:
    settings.FANFOLD = {}
    conf.reset()
    with pytest.raises(ParseError) as refused:
        parse(b'{"value": ' + b"7" * 5000 + b"}")
    message = str(refused.value.detail)
    assert message == (
        "the request body is not valid JSON: an integer of 5000 digits is too long "
        "(at most 4300 digits)"
    )
    assert "sys." not in message
    assert parse(b'{"value": -' + b"7" * 4300 + b"}")["value"] < 0
    conf.reset()
