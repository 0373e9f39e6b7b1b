"""The JSON body parser: size, nesting depth and number limits checked before decoding."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from itertools import accumulate
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from api.request_errors import RequestTooLarge
from runtime import conf

# A JSON string literal, escapes included (the unrolled form: no backtracking on long text).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class LimitedJSONParser(JSONParser):
    """Strict JSON (no NaN, Infinity or numbers that overflow to them), refusing bodies over
    FANFOLD_MAX_PAYLOAD_BYTES and nesting deeper than FANFOLD_MAX_JSON_DEPTH."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        settings = conf.get()
        limit = settings.MAX_PAYLOAD_BYTES
        request = (parser_context or {}).get("request")
        declared = _content_length(request)
        if declared is not None and declared > limit:
            raise RequestTooLarge(
                f"the request body of {declared} bytes is over the limit of {limit}"
            )
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise RequestTooLarge(f"the request body is over the limit of {limit} bytes")
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = raw.decode(encoding)
        except (LookupError, UnicodeDecodeError) as exc:
            raise ParseError(f"the request body is not valid {encoding}: {exc}") from None
        depth = nesting_depth(text)
        if depth > settings.MAX_JSON_DEPTH:
            raise ParseError(
                f"the request body nests {depth} levels deep, over the limit of "
                f"{settings.MAX_JSON_DEPTH} (FANFOLD_MAX_JSON_DEPTH)"
            )
        try:
            return json.loads(
                text,
                parse_constant=_reject_constant,
                parse_float=_finite_float,
                parse_int=_bounded_int,
            )
        except ValueError as exc:
            raise ParseError(f"the request body is not valid JSON: {exc}") from None


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of JSON text nest, counted without decoding it.

    json.loads recurses once per level, so a body nested a thousand deep would raise
    RecursionError inside it; this pass is flat. Brackets inside strings do not count. For
    text that is not JSON the answer may be too high, never too low for the part json.loads
    would read before failing.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _bounded_int(literal: str) -> int:
    # int() refuses long literals itself, but its message advises sys.set_int_max_str_digits(),
    # which a client of the API cannot call: say what the client can change instead.
    digits, limit = len(literal.lstrip("-")), sys.get_int_max_str_digits()
    if limit and digits > limit:
        raise ValueError(f"an integer of {digits} digits is too long (at most {limit} digits)")
    return int(literal)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"the number {literal[:40]} is too large")
    return value


def _content_length(request: Any) -> int | None:
    meta = getattr(request, "META", None) or {}
    try:
        return int(meta.get("CONTENT_LENGTH") or 0) or None
    except (TypeError, ValueError):
        return None
