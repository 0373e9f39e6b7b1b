"""Turning metrics and spans on or off for the whole process (runtime.apps reads the settings)."""

from __future__ import annotations

from publisher import metrics as publish_metrics
from publisher import tracing as publish_tracing
from runtime.observe import metrics, tracing


def configure(*, metrics_enabled: bool, tracing_enabled: bool) -> None:
    """Turn metrics and spans on or off for this process (FANFOLD_METRICS, FANFOLD_TRACING)."""
    metrics.set_enabled(metrics_enabled)
    publish_metrics.set_enabled(metrics_enabled)
    tracing.set_enabled(tracing_enabled)
    publish_tracing.set_enabled(tracing_enabled)
