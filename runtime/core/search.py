"""Search attributes: the declared types, values checked against them, and list filters.

A workflow declares its attributes (`@workflow(search={"customer": int, ...})`); a start and
`ctx.set_search` give values that must fit the declaration; a list query names attributes with
an optional operator (`amount__gte`). Pure: values in, checked values or InvalidArguments out.
Every value has a JSON form (a datetime as ISO 8601 text), the form the history records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.core.errors import InvalidArguments

TYPES: dict[type, str] = {
    int: "int",
    str: "str",
    float: "float",
    bool: "bool",
    datetime: "datetime",
}
KINDS = frozenset(TYPES.values())
OPERATORS = ("eq", "gte", "lte", "in", "contains")
MAX_ATTRIBUTES = 20  # per workflow
MAX_TEXT = 255  # characters of a str value: it is indexed
MAX_IN = 100  # values of one `__in`
_EXACT_INT = 2**53  # ints are compared as doubles: beyond this they would not be exact
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")


def check_attribute_name(name: object) -> str:
    """A search attribute's name: a letter, then letters, digits or single underscores (up to
    63 characters; `__` separates an operator in filters)."""
    if not isinstance(name, str) or not _NAME.match(name) or "__" in name:
        raise InvalidArguments(
            f"search attribute name {str(name)[:70]!r} must start with a letter and hold only "
            "letters, digits and single underscores (at most 63 characters)"
        )
    return name


def declaration(search: object) -> dict[str, str]:
    """`@workflow(search=...)` as {name: kind}; TypeError for anything else than a dict of
    names to int, str, float, bool or datetime."""
    if search is None:
        return {}
    if not isinstance(search, Mapping) or len(search) > MAX_ATTRIBUTES:
        raise TypeError(
            f"workflow(search=...) takes a dict of at most {MAX_ATTRIBUTES} names to types"
        )
    declared: dict[str, str] = {}
    for name, kind in search.items():
        try:
            check_attribute_name(name)
        except InvalidArguments as exc:
            raise TypeError(str(exc)) from None
        if kind not in TYPES:
            raise TypeError(
                f"search attribute {name!r} has type {kind!r}: use int, str, float, bool or "
                "datetime"
            )
        declared[name] = TYPES[kind]
    return declared


def _refuse(name: str, kind: str, value: object) -> InvalidArguments:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return InvalidArguments(f"search attribute {name!r} must be of type {kind}, not {shown}")


def _as_datetime(name: str, value: object) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise _refuse(name, "datetime (ISO 8601 text)", value) from None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise _refuse(name, "datetime with a time zone", value)
    return value


def checked_value(name: str, kind: str, value: object) -> Any:
    """`value` of the attribute `name` declared `kind`, in its JSON form; InvalidArguments if
    it does not fit (a bool is not an int, an int is a float; a datetime has a time zone)."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
    elif kind == "int":
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _EXACT_INT:
            return value
    elif kind == "float":
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and value == value and abs(value) != float("inf"):  # type: ignore[arg-type]
            return float(value)  # type: ignore[arg-type]
    elif kind == "str":
        if isinstance(value, str) and len(value) <= MAX_TEXT and "\x00" not in value:
            return value
    else:
        return _as_datetime(name, value).isoformat()
    raise _refuse(name, kind, value)


def checked_values(workflow: str, declared: Mapping[str, str], values: object) -> dict[str, Any]:
    """Values given to a run of `workflow` (at start or by `ctx.set_search`), checked against
    its declaration, in their JSON forms; InvalidArguments names the first that does not fit."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise InvalidArguments("search takes a dict of attribute names to values")
    out: dict[str, Any] = {}
    for name, value in values.items():
        kind = declared.get(name) if isinstance(name, str) else None
        if kind is None:
            known = ", ".join(sorted(declared)) or "none"
            raise InvalidArguments(
                f"workflow {workflow!r} declares no search attribute {str(name)[:70]!r} "
                f"(it declares: {known})"
            )
        out[name] = checked_value(name, kind, value)
    return out


class InvalidFilter(InvalidArguments):
    """A list filter that cannot be used; `name` is the filter as the caller wrote it."""

    code = "invalid_filter"

    def __init__(self, message: str = "", name: str = "") -> None:
        super().__init__(message)
        self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message, self.name))


@dataclass(frozen=True)
class Condition:
    """One attribute filter: `name` `op` `value` (a list for "in"), values in JSON form."""

    name: str
    kind: str
    op: str
    value: Any


_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _from_text(name: str, kind: str, text: str) -> Any:
    """A query string's text as a value of `kind` (REST, the CLI)."""
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            return _BOOLS[text.strip().lower()]
    except (ValueError, KeyError):
        raise _refuse(name, kind, text) from None
    return text


def condition(key: str, kind: str, raw: Any, *, text: bool = False) -> Condition:
    """The filter `key` (`name` or `name__op`) = `raw` on an attribute declared `kind`;
    `text` when the value came as query-string text (coerced to `kind`; "in" splits on
    commas). InvalidArguments for an unknown operator or a value that does not fit."""
    name, _, op = key.partition("__")
    op = op or "eq"
    if op not in OPERATORS:
        raise InvalidArguments(
            f"search filter {key!r}: unknown operator {op!r} (use __gte, __lte, __in, __contains)"
        )
    if op == "contains" and kind != "str":
        raise InvalidArguments(f"search filter {key!r}: __contains applies to str attributes")
    if op in ("gte", "lte") and kind == "bool":
        raise InvalidArguments(f"search filter {key!r}: a bool has no range")

    def one(value: Any) -> Any:
        if text and isinstance(value, str):
            value = _from_text(name, kind, value)
        return checked_value(name, kind, value)

    if op == "in":
        items = raw.split(",") if text and isinstance(raw, str) else raw
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= MAX_IN:
            raise InvalidArguments(f"search filter {key!r} takes 1 to {MAX_IN} values")
        return Condition(name, kind, op, [one(v) for v in items])
    return Condition(name, kind, op, one(raw))


def kind_of(name: str, declarations: Iterable[Mapping[str, str]]) -> str:
    """The kind of attribute `name` across these declarations (the workflows a query spans);
    InvalidArguments if none declares it or they disagree (int and float agree: numbers)."""
    kinds = {d[name] for d in declarations if name in d}
    if not kinds:
        raise InvalidArguments(f"no workflow declares a search attribute {name!r}")
    if kinds == {"int", "float"}:
        return "float"
    if len(kinds) > 1:
        raise InvalidArguments(
            f"search attribute {name!r} has different types in different workflows "
            f"({', '.join(sorted(kinds))}): filter by workflow too"
        )
    return kinds.pop()


def conditions(
    filters: Mapping[str, Any], declarations: list[Mapping[str, str]], *, text: bool = False
) -> list[Condition]:
    """Every filter of `filters` ({"customer": 42, "amount__gte": 100}) as a Condition."""
    out = []
    for key, raw in filters.items():
        try:
            if not isinstance(key, str):
                raise InvalidArguments(f"search filter {key!r} must be text")
            name = check_attribute_name(key.partition("__")[0])
            out.append(condition(key, kind_of(name, declarations), raw, text=text))
        except InvalidArguments as exc:
            raise InvalidFilter(str(exc), f"search.{key}") from None
    return out
