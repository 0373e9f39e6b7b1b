"""Fanfold's typed settings: one object, every `FANFOLD_*` value with its default.

Values come from `settings.FANFOLD` (a dict filled from `FANFOLD_*` environment variables
by config/settings.py). Bad values are reported by the system check in runtime.checks.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, fields
from datetime import timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from runtime.core.durations import InvalidDuration, parse_duration
from runtime.core.payload_errors import PayloadKeyInvalid
from runtime.core.payload_keys import fernets
from runtime.core.versions import VERSION_NAME, VERSION_RULE


@dataclass(frozen=True)
class FanfoldSettings:
    WORKFLOW_MODULES: tuple[str, ...] = ()
    PUBLISH_BATCH_SIZE: int = 100
    # Fan-out branches one message may carry (1: a message per branch), and how long their
    # bodies may run before its worker publishes the rest on their own (runtime.fanout.chunk).
    # A chunk's quick branches report a window at a time (runtime.fanout.chunk_window), so a
    # message, about as costly to a prefork worker as a window's commit, is most of what is
    # left per branch: 25 a message took a no-op branch's worker CPU from about 600 to 320 us.
    BRANCH_CHUNK: int = 25
    BRANCH_CHUNK_SECONDS: float = 0.1
    # How long the step bodies of a message of several runs' starts may run, in all, before its
    # worker sends the runs not yet started on their own (runtime.worker.run_batch).
    RUN_BATCH_SECONDS: float = 0.1
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
    # How long one server-sent-events response of a stream lasts before the client reconnects:
    # well below gunicorn's 30 s worker timeout.
    SSE_WINDOW_SECONDS: float = 15.0
    # The REST API (docs/rest-api.md): JSON nesting a request body may have, open streams a
    # user may hold across every web process, serialized bytes a list page stops after,
    # requests a user may make ("N/second|minute|hour|day"; "" for no limit), and the proxies
    # whose X-Forwarded-For the callback throttle believes (addresses or networks).
    MAX_JSON_DEPTH: int = 64
    MAX_STREAMS_PER_USER: int = 4
    API_PAGE_BYTES: int = 1024 * 1024
    API_USER_RATE: str = "3000/minute"
    TRUSTED_PROXIES: tuple[str, ...] = ()
    # Schedules (runtime.flow): how often each worker looks for due ticks, and how old a due
    # tick may be and still count as on time rather than missed (the catch-up policy's case).
    SCHEDULE_INTERVAL: float = 1.0
    SCHEDULE_GRACE: float = 60.0
    # Workers freeze the objects they hold at start-up out of the cyclic collector
    # (runtime.worker.gc_freeze).
    GC_FREEZE: bool = True
    # Data lifecycle (docs/data-lifecycle.md). Payload keys are Fernet keys: the first
    # encrypts, all decrypt; kept out of the repr, which reaches logs.
    PAYLOAD_KEYS: tuple[str, ...] = field(default=(), repr=False)
    # Stored payloads larger than this go to STORAGES["fanfold_payloads"]; 0: none do.
    OFFLOAD_BYTES: int = 256 * 1024
    # How long finished runs are kept; None keeps them all.
    RETENTION: timedelta | None = timedelta(days=30)
    # Whether runs are written to STORAGES["fanfold_archive"] before they are deleted.
    ARCHIVE: bool = False
    # How long emitted signals are kept for waits with a `lookback` (runtime.messaging).
    SIGNAL_RETENTION: timedelta = timedelta(days=1)
    # Async step bodies (runtime.eventloop): how many one worker process runs at once on its
    # event loop, and how late (seconds) the loop may run before a warning names the body
    # that blocked it (0: no lag monitor).
    ASYNC_CONCURRENCY: int = 100
    # How long (seconds) a run whose `ctx.next_update` finds no update keeps its worker,
    # woken by the next update's notification, before it suspends (0: it suspends at once).
    UPDATE_LINGER: float = 0.0
    ASYNC_LAG_WARNING: float = 0.1
    # Warm resumes (runtime.warm, docs/operating.md): how many suspended sync runs each worker
    # thread keeps parked (0: none; every resume replays), and for how long (seconds) at most.
    WARM_RUNS: int = 1000
    WARM_RUN_SECONDS: float = 300.0
    # How long (seconds) a resume waits for the worker node that keeps its run parked before
    # the run sweep sends it to any worker (runtime.warm.routing; 0: resumes go to any worker).
    WARM_ROUTE_SECONDS: float = 2.0
    # Connection poolers (docs/deploying.md): whether Django's default database is reached
    # through a transaction-pooling pooler (PgBouncer, RDS Proxy, pgcat), and the PostgreSQL
    # URL of the database itself for what needs a session of its own (LISTEN, the liveness
    # lock, the stream slots); "" uses the default database's settings. A URL without a
    # database name takes the default database's name.
    DATABASE_POOLED: bool = False
    DIRECT_DATABASE_URL: str = field(default="", repr=False)
    # A read replica (docs/deploying.md): the DATABASES alias of a streaming replica that
    # serves reads which may lag ("": none), and how far behind (seconds) it may be and serve.
    READ_DATABASE: str = ""
    READ_MAX_LAG: float = 5.0
    # Whether each worker process holds a liveness lock (runtime.leases.liveness): a direct
    # connection per process, which lets a dead process's leases go in about two seconds.
    # Off, they go when they expire (LEASE_SECONDS): for hosts of many processes. None
    # ("auto"): on, unless DATABASE_POOLED is (see `liveness_locks`).
    LIVENESS_LOCKS: bool | None = None
    # Deployment versions (docs/deploying.md): this process's version ("": a digest of the
    # source of the modules that register workflows and steps), the older versions its
    # workers also serve, and how long (seconds) a version may go without a live worker
    # before its runs count as stranded.
    APP_VERSION: str = ""
    SERVE_VERSIONS: tuple[str, ...] = ()
    VERSION_STRANDED_AFTER: float = 300.0

    @property
    def liveness_locks(self) -> bool:
        """Whether worker processes hold liveness locks: LIVENESS_LOCKS, or when it is left
        to "auto", whether the database is reached directly. Behind a pooler the locks would
        cost a direct session per process, the connections the pooler is there to spare."""
        if self.LIVENESS_LOCKS is None:
            return not self.DATABASE_POOLED
        return self.LIVENESS_LOCKS


class SettingsError(ValueError):
    pass


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
_MAY_BE_ZERO = {
    "CHECKPOINT_ASYNC_WINDOW",
    "METRICS_PORT",
    "OFFLOAD_BYTES",
    "ASYNC_LAG_WARNING",
    "UPDATE_LINGER",
    "WARM_RUNS",
    "WARM_RUN_SECONDS",
    "WARM_ROUTE_SECONDS",
}
_RATE = re.compile(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)")
_KEEP_EVERYTHING = {"none", "never", "off"}
_POSTGRES_URLS = ("postgres://", "postgresql://")


def _payload_keys(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        keys = tuple(part.strip() for part in raw.split(",") if part.strip())
    elif isinstance(raw, list | tuple) and all(isinstance(key, str) for key in raw):
        keys = tuple(key.strip() for key in raw)
    else:
        raise SettingsError("FANFOLD_PAYLOAD_KEYS must be a list of Fernet keys")
    try:
        fernets(keys)
    except PayloadKeyInvalid as exc:
        raise SettingsError(str(exc)) from None
    return keys


def _retention(raw: Any) -> timedelta | None:
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in _KEEP_EVERYTHING):
        return None
    try:
        return parse_duration(raw)
    except InvalidDuration as exc:
        raise SettingsError(f"FANFOLD_RETENTION: {exc} (or None to keep every run)") from None


def _signal_retention(raw: Any) -> timedelta:
    try:
        return parse_duration(raw)
    except InvalidDuration as exc:
        raise SettingsError(f"FANFOLD_SIGNAL_RETENTION: {exc}") from None


_SPECIAL = {
    "PAYLOAD_KEYS": _payload_keys,
    "RETENTION": _retention,
    "SIGNAL_RETENTION": _signal_retention,
}


def _coerce_text(name: str, kind: str, raw: Any) -> Any:
    if kind == "str":
        if not isinstance(raw, str):
            raise SettingsError(f"FANFOLD_{name} must be a string")
        if name == "DIRECT_DATABASE_URL" and raw and not raw.startswith(_POSTGRES_URLS):
            raise SettingsError("FANFOLD_DIRECT_DATABASE_URL must be a postgres:// URL")
        if name == "APP_VERSION" and raw and not VERSION_NAME.fullmatch(raw):
            raise SettingsError(f"FANFOLD_APP_VERSION: {VERSION_RULE}, got {raw!r}")
        if name.endswith("_RATE") and raw and not _RATE.fullmatch(raw):
            raise SettingsError(f"FANFOLD_{name} must be like 100/minute, got {raw!r}")
        return raw
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise SettingsError(f"FANFOLD_{name} must be on or off (1/0, true/false), got {raw!r}")


def _coerce(name: str, kind: Any, raw: Any) -> Any:
    if name in _SPECIAL:
        return _SPECIAL[name](raw)
    if kind == "bool | None":
        if raw is None or (isinstance(raw, str) and raw.strip().lower() == "auto"):
            return None
        try:
            return _coerce_text(name, "bool", raw)
        except SettingsError:
            raise SettingsError(f"FANFOLD_{name} must be on, off or auto, got {raw!r}") from None
    if kind in ("str", "bool"):
        return _coerce_text(name, kind, raw)
    if kind == "tuple[str, ...]":
        if isinstance(raw, str):
            return _checked_list(name, tuple(p.strip() for p in raw.split(",") if p.strip()))
        if isinstance(raw, list | tuple) and all(isinstance(p, str) for p in raw):
            return _checked_list(name, tuple(raw))
        raise SettingsError(f"FANFOLD_{name} must be a comma-separated list of names")
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
    if name == "MAX_STREAMS_PER_USER" and value > 1000:
        raise SettingsError("FANFOLD_MAX_STREAMS_PER_USER must be at most 1000")
    if name in ("PUBLISH_BATCH_SIZE", "BRANCH_CHUNK") and value > 100:
        raise SettingsError(f"FANFOLD_{name} must be at most 100")
    if name == "UPDATE_LINGER" and value > 10:
        raise SettingsError("FANFOLD_UPDATE_LINGER must be at most 10 seconds")
    if name == "ASYNC_CONCURRENCY" and value > 10000:
        raise SettingsError("FANFOLD_ASYNC_CONCURRENCY must be at most 10000")
    return value


def _checked_list(name: str, parts: tuple[str, ...]) -> tuple[str, ...]:
    if name == "SERVE_VERSIONS":
        for part in parts:
            if not VERSION_NAME.fullmatch(part):
                raise SettingsError(f"FANFOLD_SERVE_VERSIONS: {VERSION_RULE}, got {part!r}")
    if name == "TRUSTED_PROXIES":
        for part in parts:
            try:
                ipaddress.ip_network(part, strict=False)
            except ValueError:
                raise SettingsError(
                    f"FANFOLD_TRUSTED_PROXIES must list addresses or networks, got {part!r}"
                ) from None
    return parts


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


def token_secrets() -> tuple[bytes, ...]:
    """The keys callback tokens are derived with (runtime.core.callbacks.derive_token):
    Django's SECRET_KEY first (new tokens), then SECRET_KEY_FALLBACKS (older tokens still
    recomputed on replay). Every web process and worker must share them."""
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return tuple(k.encode() if isinstance(k, str) else bytes(k) for k in keys)
