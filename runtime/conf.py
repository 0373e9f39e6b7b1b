"""Fanfold's typed settings: one object, every `FANFOLD_*` value with its default.

Values come from `settings.FANFOLD` (a dict filled from `FANFOLD_*` environment variables
by config/settings.py). Bad values are reported by the system check in runtime.checks.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver


@dataclass(frozen=True)
class FanfoldSettings:
    WORKFLOW_MODULES: tuple[str, ...] = ()
    PUBLISH_BATCH_SIZE: int = 100
    # Fan-out branches one message may carry (1: a message per branch), and how long their
    # bodies may run before its worker publishes the rest on their own (runtime.fanout.chunk).
    BRANCH_CHUNK: int = 10
    BRANCH_CHUNK_SECONDS: float = 0.1
    MAX_PAYLOAD_BYTES: int = 1024 * 1024
    LEASE_SECONDS: float = 30.0
    SWEEP_INTERVAL: float = 5.0
    TAKEOVER_INTERVAL: float = 1.0
    CHECKPOINT_MAX_ITEMS: int = 1000
    CHECKPOINT_MAX_BYTES: int = 4 * 1024 * 1024
    CHECKPOINT_ASYNC_WINDOW: float = 0.002
    EMBEDDED_CONCURRENCY: int = 4
    # The queue of workflow executions ("": Celery's routing, the default queue): a threads
    # worker on it group-commits many runs' steps while branches stay on prefork workers.
    RUN_QUEUE: str = ""
    # Observability (docs/observability.md): Prometheus metrics and OpenTelemetry spans.
    METRICS: bool = True
    METRICS_TOKEN: str = ""  # a bearer token that may read /metrics (staff sessions always may)
    METRICS_PORT: int = 0  # a worker's metrics exporter port; 0: no exporter
    TRACING: bool = True  # spans, when opentelemetry-api is installed
    # How long one server-sent-events response of a stream lasts before the client reconnects.
    SSE_WINDOW_SECONDS: float = 30.0
    # Schedules (runtime.flow): how often each worker looks for due ticks, and how old a due
    # tick may be and still count as on time rather than missed (the catch-up policy's case).
    SCHEDULE_INTERVAL: float = 1.0
    SCHEDULE_GRACE: float = 60.0
    # Workers freeze the objects they hold at start-up out of the cyclic collector
    # (runtime.worker_gc).
    GC_FREEZE: bool = True
    # Async step bodies (runtime.eventloop): how many one worker process runs at once on its
    # event loop, and how late (seconds) the loop may run before a warning names the body
    # that blocked it (0: no lag monitor).
    ASYNC_CONCURRENCY: int = 100
    ASYNC_LAG_WARNING: float = 0.1


class SettingsError(ValueError):
    pass


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
_MAY_BE_ZERO = {"CHECKPOINT_ASYNC_WINDOW", "METRICS_PORT", "ASYNC_LAG_WARNING"}


def _coerce_text(name: str, kind: str, raw: Any) -> Any:
    if kind == "str":
        if not isinstance(raw, str):
            raise SettingsError(f"FANFOLD_{name} must be a string")
        return raw
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise SettingsError(f"FANFOLD_{name} must be on or off (1/0, true/false), got {raw!r}")


def _coerce(name: str, kind: Any, raw: Any) -> Any:
    if kind in ("str", "bool"):
        return _coerce_text(name, kind, raw)
    if kind == "tuple[str, ...]":
        if isinstance(raw, str):
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        if isinstance(raw, list | tuple) and all(isinstance(p, str) for p in raw):
            return tuple(raw)
        raise SettingsError(f"FANFOLD_{name} must be a comma-separated list of module names")
    try:
        value = int(raw) if kind == "int" else float(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"FANFOLD_{name} must be a number, got {raw!r}") from None
    if value <= 0 and name not in _MAY_BE_ZERO:
        raise SettingsError(f"FANFOLD_{name} must be greater than 0, got {raw!r}")
    if value < 0:
        raise SettingsError(f"FANFOLD_{name} must not be negative, got {raw!r}")
    if name == "METRICS_PORT" and value > 65535:
        raise SettingsError("FANFOLD_METRICS_PORT must be a TCP port (0 for none)")
    if name in ("PUBLISH_BATCH_SIZE", "BRANCH_CHUNK") and value > 100:
        raise SettingsError(f"FANFOLD_{name} must be at most 100")
    if name == "ASYNC_CONCURRENCY" and value > 10000:
        raise SettingsError("FANFOLD_ASYNC_CONCURRENCY must be at most 10000")
    return value


def parse(raw: dict[str, Any]) -> FanfoldSettings:
    """Build the settings object from raw values, raising SettingsError on the first bad one."""
    known = {f.name: f for f in fields(FanfoldSettings)}
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise SettingsError(
            f"unknown Fanfold setting(s): {', '.join('FANFOLD_' + u for u in unknown)}"
        )
    values = {name: _coerce(name, str(known[name].type), value) for name, value in raw.items()}
    return FanfoldSettings(**values)


@lru_cache(maxsize=1)
def get() -> FanfoldSettings:
    return parse(getattr(settings, "FANFOLD", {}))


def reset() -> None:
    """Forget the cached settings (tests that override `settings.FANFOLD`)."""
    get.cache_clear()


@receiver(setting_changed)
def _reset_on_change(setting: str, **_: object) -> None:
    if setting == "FANFOLD":
        reset()
