"""The JSON body parser, with the body size limit checked on the raw bytes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from api.exceptions import RequestTooLarge
from runtime import conf


class LimitedJSONParser(JSONParser):
    """Strict JSON (no NaN or Infinity), refusing bodies over FANFOLD_MAX_PAYLOAD_BYTES."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        limit = conf.get().MAX_PAYLOAD_BYTES
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
            return json.loads(raw.decode(encoding), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"the request body is not valid JSON: {exc}") from None
        except RecursionError:  # nested deeper than the decoder goes: bad input, not a 500
            raise ParseError("the request body is nested too deeply") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _content_length(request: Any) -> int | None:
    meta = getattr(request, "META", None) or {}
    try:
        return int(meta.get("CONTENT_LENGTH") or 0) or None
    except (TypeError, ValueError):
        return None
