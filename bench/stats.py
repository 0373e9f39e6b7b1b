"""Small statistics helpers for benchmark reports."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], pct: float) -> float:
    """The `pct` percentile (0-100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def p50_p95(values: Sequence[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 4), "p95": round(percentile(values, 95), 4)}


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0
