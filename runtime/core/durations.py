"""Durations as people write them in settings and decorators: `90s`, `15m`, `12h`, `30d`, `1w`.

A duration is a number and one unit: `s` (seconds), `m` (minutes), `h` (hours), `d` (days)
or `w` (weeks). The number may have a decimal part (`1.5h`); a plain number, as text or as an
int or float, counts seconds; a `timedelta` is taken as it is. Values are exact to the
microsecond, like `timedelta` itself: finer digits are rounded half to even. Months and years
are left out on purpose: they have no fixed length. `format_duration` writes a duration back
as the shortest such text, which `parse_duration` reads as the same `timedelta`.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

from runtime.core.errors import FanfoldError

_MICROS = 1_000_000
# Largest first: on a tie in length, format_duration writes the larger unit ("2w", not "14d").
UNIT_MICROSECONDS: dict[str, int] = {
    "w": 7 * 86_400 * _MICROS,
    "d": 86_400 * _MICROS,
    "h": 3_600 * _MICROS,
    "m": 60 * _MICROS,
    "s": _MICROS,
}
_MAX_MICROSECONDS = (timedelta.max.days * 86_400 + timedelta.max.seconds) * _MICROS + (
    timedelta.max.microseconds
)
_TEXT = re.compile(r"(?P<amount>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[wdhms]?)")
_FORMS = "a number and a unit s, m, h, d or w (e.g. '90s', '15m', '12h', '30d', '1w')"


class InvalidDuration(FanfoldError, ValueError):
    """Text or a number that is not a duration (or not one allowed where it is used)."""

    code = "invalid_duration"


def parse_duration(value: object, *, allow_zero: bool = False) -> timedelta:
    """Read `value` as a duration: text such as `"30d"`, a number of seconds, or a `timedelta`.

    Raises InvalidDuration, naming the value, for anything else: unknown units, negative
    durations, durations longer than `timedelta` can hold, and zero unless `allow_zero` (zero
    means nothing for most uses: a retention of zero would delete runs as they finish).
    """
    if isinstance(value, timedelta):
        micros = _exact_micros(value)
    elif isinstance(value, bool):
        raise InvalidDuration(f"{value!r} is not a duration: expected {_FORMS}")
    elif isinstance(value, int | float):
        micros = _micros_of_number(value)
    elif isinstance(value, str):
        micros = _micros_of_text(value)
    else:
        raise InvalidDuration(
            f"{value!r} (a {type(value).__name__}) is not a duration: expected {_FORMS}"
        )
    if micros < 0:
        raise InvalidDuration(f"duration {value!r} is negative")
    if micros > _MAX_MICROSECONDS:
        raise InvalidDuration(f"duration {value!r} is too long (at most {timedelta.max.days}d)")
    if micros == 0 and not allow_zero:
        raise InvalidDuration(f"duration {value!r} is zero (to the microsecond); it must be longer")
    return timedelta(microseconds=micros)


def format_duration(value: timedelta) -> str:
    """The shortest text `parse_duration` reads as `value`: `"30d"`, `"90m"`, `"1.5s"`.

    Of the units whose amount is a finite decimal, the one giving the shortest text wins, and
    the larger unit on a tie. Raises InvalidDuration for a negative duration.
    """
    micros = _exact_micros(value)
    if micros < 0:
        raise InvalidDuration(f"duration {value!r} is negative")
    if micros == 0:
        return "0s"
    candidates = []
    for unit, unit_micros in UNIT_MICROSECONDS.items():
        amount = Fraction(micros, unit_micros)
        text = _decimal_text(amount)
        if text is not None:
            candidates.append(f"{text}{unit}")
    # Seconds always qualify (a microsecond is 10**-6 s), so there is at least one candidate.
    return min(candidates, key=len)


def _exact_micros(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * _MICROS + value.microseconds


def _micros_of_number(value: float) -> int:
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidDuration(f"{value!r} is not a duration: expected a finite number of seconds")
    return _rounded_micros(Decimal(value), _MICROS)


def _micros_of_text(value: str) -> int:
    text = value.strip()
    if text.startswith("-") and _TEXT.fullmatch(text[1:].strip()):
        raise InvalidDuration(f"duration {value!r} is negative")
    match = _TEXT.fullmatch(text)
    if match is None:
        raise InvalidDuration(f"{value!r} is not a duration: expected {_FORMS}")
    unit_micros = UNIT_MICROSECONDS[match["unit"] or "s"]
    return _rounded_micros(Decimal(match["amount"]), unit_micros)


def _rounded_micros(amount: Decimal, unit_micros: int) -> int:
    with localcontext() as context:
        # Enough digits that the product is exact, however many digits were written.
        context.prec = len(amount.as_tuple().digits) + 20
        context.rounding = ROUND_HALF_EVEN
        return int((amount * unit_micros).to_integral_value())


def _decimal_text(amount: Fraction) -> str | None:
    """`amount` as plain decimal text, or None when its decimal expansion does not end."""
    denominator = amount.denominator
    twos = fives = 0
    while denominator % 2 == 0:
        denominator //= 2
        twos += 1
    while denominator % 5 == 0:
        denominator //= 5
        fives += 1
    if denominator != 1:
        return None
    places = max(twos, fives)
    scaled = amount.numerator * 10**places // amount.denominator
    whole, fraction = divmod(scaled, 10**places) if places else (scaled, 0)
    if not places:
        return str(whole)
    return f"{whole}.{fraction:0{places}d}".rstrip("0").rstrip(".")
