"""Rate limits, pure: parsing `"N/s|m|h"` into the spacing between two body starts."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PERIODS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_RATE = re.compile(r"\s*(\d+)\s*/\s*([smh])\s*")


@dataclass(frozen=True)
class Rate:
    """At most `count` body starts per `period` seconds, spread evenly."""

    count: int
    period: float
    text: str

    @property
    def spacing(self) -> float:
        """Seconds between two consecutive starts: evenly spaced starts never put more than
        `count` into any window of `period`, where a bucket of `count` tokens could put twice
        that into one window (a full bucket, then a full refill)."""
        return self.period / self.count


def parse_rate(value: object) -> Rate:
    """`"20/s"`, `"100/m"` or `"5/h"` as a Rate; ValueError for anything else."""
    match = _RATE.fullmatch(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) <= 0:
        raise ValueError(
            f'rate_limit takes "N/s", "N/m" or "N/h" with N a positive integer, not {value!r}'
        )
    return Rate(int(match.group(1)), _PERIODS[match.group(2)], match.group(0).strip())
